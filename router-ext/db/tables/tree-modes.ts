// tree_modes: each tree's mode state (stage, recoveries, hard stop), as JSON.
import { parseTreeState, type TreeModeState } from "../../modes/actions.ts";
import type { Sql } from "../../store/sql.ts";

export function treeModesTable(sql: Sql) {
  const row = (rootId: string) =>
    sql.get<{ state: string }>("SELECT state FROM tree_modes WHERE root_id = ?", [rootId]);
  return {
    /** The tree's state; a tree never seen (or unreadable) starts over. */
    async get(rootId: string): Promise<TreeModeState> {
      return parseTreeState(rootId, (await row(rootId))?.state);
    },
    async has(rootId: string): Promise<boolean> {
      return (await row(rootId)) !== undefined;
    },
    async set(state: TreeModeState, at: number): Promise<void> {
      await sql.run(
        `INSERT INTO tree_modes (root_id, state, updated_at) VALUES (?, ?, ?)
         ON CONFLICT(root_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
        [state.rootId, JSON.stringify(state), at],
      );
    },
    /** Rewrites a stored tree's state; a tree without one stays without. */
    async update(state: TreeModeState, at: number): Promise<void> {
      await sql.run("UPDATE tree_modes SET state = ?, updated_at = ? WHERE root_id = ?", [
        JSON.stringify(state),
        at,
        state.rootId,
      ]);
    },
    /** The tree starts over: a tree without a stored state is at policy.ts initialTreeState. */
    async delete(rootId: string): Promise<void> {
      await sql.run("DELETE FROM tree_modes WHERE root_id = ?", [rootId]);
    },
    async prune(cutoff: number): Promise<number> {
      const r = await sql.run(
        `DELETE FROM tree_modes WHERE updated_at < ?
           AND root_id NOT IN (SELECT key FROM refusals WHERE scope = 'tree' AND state = 'stopped')`,
        [cutoff],
      );
      return r.changes;
    },
  };
}
export type TreeModesTable = ReturnType<typeof treeModesTable>;
