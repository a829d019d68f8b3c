// session_samples: a heartbeat's numbers per session (turns since landed, the
// last landed change, context size), stored only when they changed since the
// session's previous sample, so an idle session adds nothing.
import type { Sql } from "../../store/sql.ts";

export interface SampleRow {
  at: number;
  turns_since_landed: number;
  last_landed_at: number | null;
  context_tokens: number;
}

const sameSample = (a: SampleRow | undefined, b: SampleRow): boolean =>
  a !== undefined &&
  a.turns_since_landed === b.turns_since_landed &&
  a.last_landed_at === b.last_landed_at &&
  a.context_tokens === b.context_tokens;

export function samplesTable(sql: Sql) {
  return {
    /** Stores the sample unless it repeats the session's last one; true when stored (call inside a transaction). */
    async insert(sessionId: string, s: SampleRow): Promise<boolean> {
      const last = await sql.get<SampleRow>(
        `SELECT at, turns_since_landed, last_landed_at, context_tokens FROM session_samples
         WHERE session_id = ? ORDER BY at DESC, seq DESC LIMIT 1`,
        [sessionId],
      );
      if (sameSample(last, s)) return false;
      await sql.run(
        `INSERT INTO session_samples (session_id, at, turns_since_landed, last_landed_at, context_tokens)
         VALUES (@session_id, @at, @turns_since_landed, @last_landed_at, @context_tokens)`,
        { session_id: sessionId, ...s },
      );
      return true;
    },
    /** The session's latest `limit` samples, oldest first. */
    forSession(sessionId: string, limit: number): Promise<SampleRow[]> {
      return sql.all(
        `SELECT at, turns_since_landed, last_landed_at, context_tokens FROM (
           SELECT * FROM session_samples WHERE session_id = ? ORDER BY at DESC, seq DESC LIMIT ?) AS latest
         ORDER BY at, seq`,
        [sessionId, limit],
      );
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM session_samples WHERE at < ?", [cutoff])).changes;
    },
  };
}
export type SamplesTable = ReturnType<typeof samplesTable>;
