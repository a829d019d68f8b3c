// context_caps: the modes' per-tree context cap, read by the gate.
import type { Sql } from "../../store/sql.ts";

export function capsTable(sql: Sql) {
  const row = (rootId: string) =>
    sql.get<{ cap: number; set_at: number }>("SELECT cap, set_at FROM context_caps WHERE root_id = ?", [
      rootId,
    ]);
  return {
    async set(rootId: string, cap: number, at: number): Promise<void> {
      await sql.run(
        `INSERT INTO context_caps (root_id, cap, set_at) VALUES (?, ?, ?)
         ON CONFLICT(root_id) DO UPDATE SET cap = excluded.cap, set_at = excluded.set_at`,
        [rootId, Math.max(1, Math.floor(cap)), at],
      );
    },
    async get(rootId: string): Promise<number | null> {
      return (await row(rootId))?.cap ?? null;
    },
    /** The cap with when it was set, or null. */
    async row(rootId: string): Promise<{ cap: number; set_at: number } | null> {
      return (await row(rootId)) ?? null;
    },
    async delete(rootId: string): Promise<void> {
      await sql.run("DELETE FROM context_caps WHERE root_id = ?", [rootId]);
    },
  };
}
export type CapsTable = ReturnType<typeof capsTable>;
