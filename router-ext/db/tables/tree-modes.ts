// tree_modes: each tree's mode state (stage, recoveries, hard stop), as JSON.
import type Database from "better-sqlite3";
import { parseTreeState, type TreeModeState } from "../../modes/policy.ts";

export function treeModesTable(db: Database.Database) {
  const get = db.prepare<[string], { state: string }>("SELECT state FROM tree_modes WHERE root_id = ?");
  const set = db.prepare(
    `INSERT INTO tree_modes (root_id, state, updated_at) VALUES (?, ?, ?)
     ON CONFLICT(root_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
  );
  const update = db.prepare("UPDATE tree_modes SET state = ?, updated_at = ? WHERE root_id = ?");
  const del = db.prepare("DELETE FROM tree_modes WHERE root_id = ?");
  const prune = db.prepare(
    "DELETE FROM tree_modes WHERE updated_at < ? AND root_id NOT IN (SELECT key FROM refusals WHERE scope = 'tree' AND state = 'stopped')",
  );
  return {
    /** The tree's state; a tree never seen (or unreadable) starts over. */
    get(rootId: string): TreeModeState {
      return parseTreeState(rootId, get.get(rootId)?.state);
    },
    has(rootId: string): boolean {
      return get.get(rootId) !== undefined;
    },
    set(state: TreeModeState, at: number): void {
      set.run(state.rootId, JSON.stringify(state), at);
    },
    /** Rewrites a stored tree's state; a tree without one stays without. */
    update(state: TreeModeState, at: number): void {
      update.run(JSON.stringify(state), at, state.rootId);
    },
    /** The tree starts over: a tree without a stored state is at policy.ts initialTreeState. */
    delete(rootId: string): void {
      del.run(rootId);
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
  };
}
export type TreeModesTable = ReturnType<typeof treeModesTable>;
