// refusals (who stopped or resumed a tree or session, and when) and their log.
import type { RefusalScope, RefusalState, RefusalView } from "../../api/schemas.ts";
import type { Sql } from "../../store/sql.ts";

export interface RefusalRow {
  scope: RefusalScope;
  key: string;
  state: RefusalState;
  reason: string | null;
  changed_by: string;
  changed_at: number;
}

/** Who stops or resumes what, when and why. */
export interface RefusalChange {
  scope: RefusalScope;
  key: string;
  state: RefusalState;
  by: string;
  at: number;
  reason: string | null;
}

export const refusalView = (r: RefusalRow): RefusalView => ({
  scope: r.scope,
  key: r.key,
  state: r.state,
  reason: r.reason,
  by: r.changed_by,
  at: r.changed_at,
});

const COLS = "scope, key, state, reason, changed_by, changed_at";

async function keys(rows: Promise<Array<{ key: string }>>): Promise<string[]> {
  return (await rows).map((r) => r.key);
}

export function refusalsTable(sql: Sql) {
  return {
    get(scope: RefusalScope, key: string): Promise<RefusalRow | undefined> {
      return sql.get(`SELECT ${COLS} FROM refusals WHERE scope = ? AND key = ?`, [scope, key]);
    },
    /** Sets the refusal and logs the change (call inside a transaction). */
    async set(change: RefusalChange): Promise<void> {
      const p = { ...change };
      await sql.run(
        `INSERT INTO refusals (${COLS}) VALUES (@scope, @key, @state, @reason, @by, @at)
         ON CONFLICT(scope, key) DO UPDATE SET state = excluded.state, reason = excluded.reason,
           changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
        p,
      );
      await sql.run(`INSERT INTO refusal_log (${COLS}) VALUES (@scope, @key, @state, @reason, @by, @at)`, p);
    },
    all(): Promise<RefusalRow[]> {
      return sql.all(`SELECT ${COLS} FROM refusals ORDER BY changed_at DESC`);
    },
    history(limit: number): Promise<RefusalRow[]> {
      return sql.all(`SELECT ${COLS} FROM refusal_log ORDER BY seq DESC LIMIT ?`, [limit]);
    },
    async stoppedCount(scope: RefusalScope): Promise<number> {
      const r = await sql.get<{ n: number }>(
        "SELECT COUNT(*) AS n FROM refusals WHERE scope = ? AND state = 'stopped'",
        [scope],
      );
      return r?.n ?? 0;
    },
    /** Sessions of a tree stopped by `by` (the modes' own refusals). */
    stoppedInTree(by: string, rootId: string): Promise<string[]> {
      return keys(
        sql.all(
          `SELECT r.key FROM refusals r WHERE r.scope = 'session' AND r.state = 'stopped' AND r.changed_by = ?
             AND r.key IN (SELECT session_id FROM sessions WHERE root_id = ?)`,
          [by, rootId],
        ),
      );
    },
    /** Sessions of a tree refused on their own now, whoever stopped them. */
    stoppedSessionsInTree(rootId: string): Promise<string[]> {
      return keys(
        sql.all(
          `SELECT key FROM refusals WHERE scope = 'session' AND state = 'stopped'
             AND key IN (SELECT session_id FROM sessions WHERE root_id = ?)`,
          [rootId],
        ),
      );
    },
    /** The logged changes of one session and of its tree, oldest first (the latest `limit`). */
    historyFor(sessionId: string, rootId: string, limit: number): Promise<RefusalRow[]> {
      return sql.all(
        `SELECT ${COLS} FROM (SELECT seq, ${COLS} FROM refusal_log
           WHERE (scope = 'session' AND key = ?) OR (scope = 'tree' AND key = ?) ORDER BY seq DESC LIMIT ?) AS latest
         ORDER BY seq`,
        [sessionId, rootId, limit],
      );
    },
    async prune(cutoff: number): Promise<{ refusals: number; log: number }> {
      const refusals = await sql.run("DELETE FROM refusals WHERE state = 'running' AND changed_at < ?", [
        cutoff,
      ]);
      const log = await sql.run("DELETE FROM refusal_log WHERE changed_at < ?", [cutoff]);
      return { refusals: refusals.changes, log: log.changes };
    },
  };
}
export type RefusalsTable = ReturnType<typeof refusalsTable>;
