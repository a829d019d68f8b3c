// refusals (who stopped or resumed a tree or session, and when) and their log.
import type Database from "better-sqlite3";
import type { RefusalScope, RefusalState, RefusalView } from "../../api/schemas.ts";

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

export function refusalsTable(db: Database.Database) {
  const cols = "scope, key, state, reason, changed_by, changed_at";
  const get = db.prepare<[RefusalScope, string], RefusalRow>(
    `SELECT ${cols} FROM refusals WHERE scope = ? AND key = ?`,
  );
  const upsert = db.prepare(
    `INSERT INTO refusals (${cols}) VALUES (@scope, @key, @state, @reason, @by, @at)
     ON CONFLICT(scope, key) DO UPDATE SET state = excluded.state, reason = excluded.reason,
       changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
  );
  const log = db.prepare(
    `INSERT INTO refusal_log (${cols}) VALUES (@scope, @key, @state, @reason, @by, @at)`,
  );
  const all = db.prepare<[], RefusalRow>(`SELECT ${cols} FROM refusals ORDER BY changed_at DESC`);
  const history = db.prepare<[number], RefusalRow>(
    `SELECT ${cols} FROM refusal_log ORDER BY seq DESC LIMIT ?`,
  );
  const stopped = db.prepare<[RefusalScope], { n: number }>(
    "SELECT COUNT(*) AS n FROM refusals WHERE scope = ? AND state = 'stopped'",
  );
  const stoppedInTree = db.prepare<[string, string], { key: string }>(
    `SELECT r.key FROM refusals r WHERE r.scope = 'session' AND r.state = 'stopped' AND r.changed_by = ?
       AND r.key IN (SELECT session_id FROM sessions WHERE root_id = ?)`,
  );
  const historyFor = db.prepare<[string, string, number], RefusalRow>(
    `SELECT * FROM (SELECT seq, ${cols} FROM refusal_log
       WHERE (scope = 'session' AND key = ?) OR (scope = 'tree' AND key = ?) ORDER BY seq DESC LIMIT ?)
     ORDER BY seq`,
  );
  const stoppedSessionsInTree = db.prepare<[string], { key: string }>(
    `SELECT key FROM refusals WHERE scope = 'session' AND state = 'stopped'
       AND key IN (SELECT session_id FROM sessions WHERE root_id = ?)`,
  );
  const pruneRunning = db.prepare("DELETE FROM refusals WHERE state = 'running' AND changed_at < ?");
  const pruneLog = db.prepare("DELETE FROM refusal_log WHERE changed_at < ?");
  return {
    get(scope: RefusalScope, key: string): RefusalRow | undefined {
      return get.get(scope, key);
    },
    /** Sets the refusal and logs the change (call inside a transaction). */
    set(change: RefusalChange): void {
      upsert.run(change);
      log.run(change);
    },
    all(): RefusalRow[] {
      return all.all();
    },
    history(limit: number): RefusalRow[] {
      return history.all(limit);
    },
    stoppedCount(scope: RefusalScope): number {
      return stopped.get(scope)?.n ?? 0;
    },
    /** Sessions of a tree stopped by `by` (the modes' own refusals). */
    stoppedInTree(by: string, rootId: string): string[] {
      return stoppedInTree.all(by, rootId).map((r) => r.key);
    },
    /** Sessions of a tree refused on their own now, whoever stopped them. */
    stoppedSessionsInTree(rootId: string): string[] {
      return stoppedSessionsInTree.all(rootId).map((r) => r.key);
    },
    /** The logged changes of one session and of its tree, oldest first (the latest `limit`). */
    historyFor(sessionId: string, rootId: string, limit: number): RefusalRow[] {
      return historyFor.all(sessionId, rootId, limit);
    },
    prune(cutoff: number): { refusals: number; log: number } {
      return { refusals: pruneRunning.run(cutoff).changes, log: pruneLog.run(cutoff).changes };
    },
  };
}
export type RefusalsTable = ReturnType<typeof refusalsTable>;
