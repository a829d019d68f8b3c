// transitions: every verdict change reported, once per id (a retried report is a duplicate).
import type Database from "better-sqlite3";
import type { Transition } from "../../../shared/index.ts";
import type { EventView } from "../../api/schemas.ts";
import type { TransitionView } from "../../api/session-detail.ts";

interface TransitionRow extends Omit<TransitionView, "signals" | "evidence"> {
  signals: string;
  evidence: string | null;
}

export function transitionsTable(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO transitions (id, session_id, root_id, source, verdict, previous, reason, at, received_at,
       signals, top_target, top_target_count, plugin_version, second_opinion, evidence)
     VALUES (@id, @session_id, @root_id, @source, @verdict, @previous, @reason, @at, @received_at,
       @signals, @top_target, @top_target_count, @plugin_version, @second_opinion, @evidence)
     ON CONFLICT(id) DO NOTHING`,
  );
  const events = db.prepare<[number], EventView>(
    `SELECT session_id, root_id, verdict, previous, reason, source, at FROM transitions
     ORDER BY at DESC, received_at DESC LIMIT ?`,
  );
  const forSession = db.prepare<[string, number], TransitionRow>(
    `SELECT * FROM (SELECT verdict, previous, reason, source, at, signals, top_target, top_target_count, evidence
       FROM transitions WHERE session_id = ? ORDER BY at DESC, received_at DESC LIMIT ?) ORDER BY at`,
  );
  const prune = db.prepare("DELETE FROM transitions WHERE received_at < ?");
  return {
    /** Stores a transition; false when its id was stored before. */
    insert(t: Transition, receivedAt: number): boolean {
      return (
        insert.run({
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
        }).changes > 0
      );
    },
    events(limit: number): EventView[] {
      return events.all(Math.max(1, Math.min(10_000, Math.floor(limit))));
    },
    /** The session's latest `limit` transitions, oldest first, with their signals and evidence. */
    forSession(sessionId: string, limit: number): TransitionView[] {
      return forSession.all(sessionId, limit).map((r) => ({
        ...r,
        signals: JSON.parse(r.signals) as TransitionView["signals"],
        evidence: r.evidence === null ? null : (JSON.parse(r.evidence) as TransitionView["evidence"]),
      }));
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
  };
}
export type TransitionsTable = ReturnType<typeof transitionsTable>;
