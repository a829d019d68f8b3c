// refused_sessions: a refusal counted once per session and refusal, with
// how many requests (client retries) it answered.
import type Database from "better-sqlite3";

export function refusedSessionsTable(db: Database.Database) {
  const count = db.prepare(
    `INSERT INTO refused_sessions (session_id, scope, refusal_at, first_at, last_at, requests)
     VALUES (@session_id, @scope, @refusal_at, @now, @now, 1)
     ON CONFLICT(session_id, scope, refusal_at) DO UPDATE SET last_at = excluded.last_at, requests = requests + 1`,
  );
  const requests = db.prepare<[string, string, number], { requests: number }>(
    "SELECT requests FROM refused_sessions WHERE session_id = ? AND scope = ? AND refusal_at = ?",
  );
  const prune = db.prepare("DELETE FROM refused_sessions WHERE last_at < ?");
  return {
    /** Counts one refused request; returns how many that refusal has answered so far. */
    count(sessionId: string, scope: string, refusalAt: number, now: number): number {
      count.run({ session_id: sessionId, scope, refusal_at: refusalAt, now });
      return requests.get(sessionId, scope, refusalAt)?.requests ?? 0;
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
  };
}
export type RefusedSessionsTable = ReturnType<typeof refusedSessionsTable>;
