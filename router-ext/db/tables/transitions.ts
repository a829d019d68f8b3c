// transitions: every verdict change reported, once per id (a retried report is a duplicate).
import type { Transition } from "../../../shared/index.ts";
import type { EventView } from "../../api/schemas.ts";
import type { TransitionView } from "../../api/session-detail.ts";
import type { Sql } from "../../store/sql.ts";

interface TransitionRow extends Omit<TransitionView, "signals" | "evidence"> {
  signals: string;
  evidence: string | null;
}

export function transitionsTable(sql: Sql) {
  return {
    /** Stores a transition; false when its id was stored before. */
    async insert(t: Transition, receivedAt: number): Promise<boolean> {
      const r = await sql.run(
        `INSERT INTO transitions (id, session_id, root_id, source, verdict, previous, reason, at, received_at,
           signals, top_target, top_target_count, plugin_version, second_opinion, evidence)
         VALUES (@id, @session_id, @root_id, @source, @verdict, @previous, @reason, @at, @received_at,
           @signals, @top_target, @top_target_count, @plugin_version, @second_opinion, @evidence)
         ON CONFLICT(id) DO NOTHING`,
        {
          id: t.id,
          session_id: t.session_id,
          root_id: t.root_id,
          source: t.source,
          verdict: t.verdict,
          previous: t.previous,
          reason: t.reason,
          at: t.at,
          received_at: receivedAt,
          signals: JSON.stringify(t.signals),
          top_target: t.top_target,
          top_target_count: t.top_target_count,
          plugin_version: t.plugin_version,
          second_opinion: t.second_opinion ? JSON.stringify(t.second_opinion) : null,
          evidence: t.evidence ? JSON.stringify(t.evidence) : null,
        },
      );
      return r.changes > 0;
    },
    events(limit: number): Promise<EventView[]> {
      return sql.all(
        `SELECT session_id, root_id, verdict, previous, reason, source, at FROM transitions
         ORDER BY at DESC, received_at DESC LIMIT ?`,
        [Math.max(1, Math.min(10_000, Math.floor(limit)))],
      );
    },
    /** The session's latest `limit` transitions, oldest first, with their signals and evidence. */
    async forSession(sessionId: string, limit: number): Promise<TransitionView[]> {
      const rows = await sql.all<TransitionRow>(
        `SELECT * FROM (SELECT verdict, previous, reason, source, at, signals, top_target, top_target_count, evidence
           FROM transitions WHERE session_id = ? ORDER BY at DESC, received_at DESC LIMIT ?) AS latest ORDER BY at`,
        [sessionId, limit],
      );
      return rows.map((r) => ({
        ...r,
        signals: JSON.parse(r.signals) as TransitionView["signals"],
        evidence: r.evidence === null ? null : (JSON.parse(r.evidence) as TransitionView["evidence"]),
      }));
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM transitions WHERE received_at < ?", [cutoff])).changes;
    },
  };
}
export type TransitionsTable = ReturnType<typeof transitionsTable>;
