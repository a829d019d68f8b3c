// session_marks: an admin's label on a session, flagged or not ("false alarm":
// healthy, "confirmed loop": loop), with who and when. One per session; the
// latest wins.
import type { Verdict } from "../../../shared/index.ts";
import type { Sql } from "../../store/sql.ts";

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

const COLS = "session_id, root_id, kind, verdict, reason, marked_by, marked_at";

export function marksTable(sql: Sql) {
  return {
    get(sessionId: string): Promise<MarkRow | undefined> {
      return sql.get(`SELECT ${COLS} FROM session_marks WHERE session_id = ?`, [sessionId]);
    },
    async set(row: MarkRow): Promise<void> {
      await sql.run(
        `INSERT INTO session_marks (${COLS}) VALUES (@session_id, @root_id, @kind, @verdict, @reason, @marked_by, @marked_at)
         ON CONFLICT(session_id) DO UPDATE SET root_id = excluded.root_id, kind = excluded.kind,
           verdict = excluded.verdict, reason = excluded.reason, marked_by = excluded.marked_by,
           marked_at = excluded.marked_at`,
        { ...row },
      );
    },
    async delete(sessionId: string): Promise<boolean> {
      return (await sql.run("DELETE FROM session_marks WHERE session_id = ?", [sessionId])).changes > 0;
    },
    /** Newest first. */
    all(limit = 100_000): Promise<MarkRow[]> {
      return sql.all(`SELECT ${COLS} FROM session_marks ORDER BY marked_at DESC, session_id LIMIT ?`, [
        limit,
      ]);
    },
    async countByKind(): Promise<Record<MarkKind, number>> {
      const out: Record<MarkKind, number> = { false_alarm: 0, confirmed_loop: 0 };
      const rows = await sql.all<{ kind: MarkKind; n: number }>(
        "SELECT kind, COUNT(*) AS n FROM session_marks GROUP BY kind",
      );
      for (const r of rows) out[r.kind] = r.n;
      return out;
    },
  };
}
export type MarksTable = ReturnType<typeof marksTable>;
