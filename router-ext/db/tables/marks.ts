// session_marks: an admin's label on a session, flagged or not ("false alarm":
// healthy, "confirmed loop": loop), with who and when. One per session; the
// latest wins.
import type Database from "better-sqlite3";
import type { Verdict } from "../../../shared/types.ts";

export type MarkKind = "false_alarm" | "confirmed_loop";
export const MARK_KINDS: readonly MarkKind[] = ["false_alarm", "confirmed_loop"];

export interface MarkRow {
  session_id: string;
  root_id: string;
  kind: MarkKind;
  /** The session's verdict and reason when it was marked. */
  verdict: Verdict;
  reason: string | null;
  marked_by: string;
  marked_at: number;
}

export function marksTable(db: Database.Database) {
  const cols = "session_id, root_id, kind, verdict, reason, marked_by, marked_at";
  const get = db.prepare<[string], MarkRow>(`SELECT ${cols} FROM session_marks WHERE session_id = ?`);
  const upsert = db.prepare(
    `INSERT INTO session_marks (${cols}) VALUES (@session_id, @root_id, @kind, @verdict, @reason, @marked_by, @marked_at)
     ON CONFLICT(session_id) DO UPDATE SET root_id = excluded.root_id, kind = excluded.kind,
       verdict = excluded.verdict, reason = excluded.reason, marked_by = excluded.marked_by,
       marked_at = excluded.marked_at`,
  );
  const del = db.prepare("DELETE FROM session_marks WHERE session_id = ?");
  const all = db.prepare<[number], MarkRow>(
    `SELECT ${cols} FROM session_marks ORDER BY marked_at DESC, session_id LIMIT ?`,
  );
  const byKind = db.prepare<[], { kind: MarkKind; n: number }>(
    "SELECT kind, COUNT(*) AS n FROM session_marks GROUP BY kind",
  );
  return {
    get(sessionId: string): MarkRow | undefined {
      return get.get(sessionId);
    },
    set(row: MarkRow): void {
      upsert.run(row);
    },
    delete(sessionId: string): boolean {
      return del.run(sessionId).changes > 0;
    },
    /** Newest first. */
    all(limit = 100_000): MarkRow[] {
      return all.all(limit);
    },
    countByKind(): Record<MarkKind, number> {
      const out: Record<MarkKind, number> = { false_alarm: 0, confirmed_loop: 0 };
      for (const r of byKind.all()) out[r.kind] = r.n;
      return out;
    },
  };
}
export type MarksTable = ReturnType<typeof marksTable>;
