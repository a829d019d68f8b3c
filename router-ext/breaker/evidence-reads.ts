// What the breaker weighs, read from the router's own tables: the gate's
// request records (which model served which tree) and the stored stall
// verdicts. Read-only; portable SQL (the signals JSON is parsed here, not by
// json1, which PostgreSQL lacks).
import type { Sql } from "../store/sql.ts";
import type { ServedEvidence, ServedRecord, ServedTree, StallRecord } from "./rule.ts";

interface ServedRow {
  model: string;
  session_id: string;
  root_id: string;
  at: number;
}

interface StallRow {
  session_id: string;
  root_id: string;
  verdict: "stalling" | "looping";
  at: number;
  signals: string;
}

/** The session's last landed change from a stored signals document, else 0 (its start). */
export function landedSince(signals: string): number {
  try {
    const v = (JSON.parse(signals) as { last_landed_at?: unknown } | null)?.last_landed_at;
    return typeof v === "number" && Number.isFinite(v) ? v : 0;
  } catch {
    return 0;
  }
}

/** Stalled sessions per query (each a bound parameter). */
const SESSIONS_PER_READ = 200;

export function breakerEvidence(sql: Sql) {
  return {
    /**
     * What the trip rule weighs of the gate's requests in [from, to]: the
     * trees each model served (one row per model and tree), and the requests
     * of the `stalled` sessions. Not every request: on a busy router the
     * window holds every request of the last hour.
     */
    async served(from: number, to: number, stalled: readonly string[]): Promise<ServedEvidence> {
      const trees = await sql.all<{ model: string; root_id: string }>(
        `SELECT DISTINCT model, COALESCE(root_id, session_id) AS root_id FROM requests
         WHERE started_at >= ? AND started_at <= ? AND refused = 0 AND model IS NOT NULL AND session_id IS NOT NULL`,
        [from, to],
      );
      const requests: ServedRecord[] = [];
      const ids = [...new Set(stalled)];
      for (let i = 0; i < ids.length; i += SESSIONS_PER_READ) {
        const chunk = ids.slice(i, i + SESSIONS_PER_READ);
        const rows = await sql.all<ServedRow>(
          `SELECT model, session_id, COALESCE(root_id, session_id) AS root_id, started_at AS at FROM requests
           WHERE session_id IN (${chunk.map(() => "?").join(", ")})
             AND started_at >= ? AND started_at <= ? AND refused = 0 AND model IS NOT NULL`,
          [...chunk, from, to],
        );
        for (const r of rows)
          requests.push({ model: r.model, sessionId: r.session_id, rootId: r.root_id, at: Number(r.at) });
      }
      return { trees: trees.map((t): ServedTree => ({ model: t.model, rootId: t.root_id })), requests };
    },
    /**
     * Stall verdicts in [from, to]; each one's stall window starts at the session's
     * last landed change, else at 0 (the session's start: its first request).
     */
    async stalls(from: number, to: number): Promise<StallRecord[]> {
      const rows = await sql.all<StallRow>(
        `SELECT session_id, root_id, verdict, at, signals FROM transitions
         WHERE verdict IN ('stalling', 'looping') AND at >= ? AND at <= ?`,
        [from, to],
      );
      return rows.map((r) => ({
        sessionId: r.session_id,
        rootId: r.root_id,
        verdict: r.verdict,
        at: Number(r.at),
        since: landedSince(r.signals),
      }));
    },
  };
}
