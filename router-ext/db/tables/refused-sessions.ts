// refused_sessions: a refusal counted once per session and refusal, with
// how many requests (client retries) it answered.
import type { Sql } from "../../store/sql.ts";

export function refusedSessionsTable(sql: Sql) {
  return {
    /** Counts one refused request; returns how many that refusal has answered so far. */
    async count(sessionId: string, scope: string, refusalAt: number, now: number): Promise<number> {
      const r = await sql.get<{ requests: number }>(
        `INSERT INTO refused_sessions (session_id, scope, refusal_at, first_at, last_at, requests)
         VALUES (@session_id, @scope, @refusal_at, @now, @now, 1)
         ON CONFLICT(session_id, scope, refusal_at)
           DO UPDATE SET last_at = excluded.last_at, requests = refused_sessions.requests + 1
         RETURNING requests`,
        { session_id: sessionId, scope, refusal_at: refusalAt, now },
      );
      return r?.requests ?? 0;
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM refused_sessions WHERE last_at < ?", [cutoff])).changes;
    },
  };
}
export type RefusedSessionsTable = ReturnType<typeof refusedSessionsTable>;
