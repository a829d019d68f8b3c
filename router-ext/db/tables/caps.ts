// context_caps: the modes' per-tree context cap, read by the gate.
import type Database from "better-sqlite3";

export function capsTable(db: Database.Database) {
  const set = db.prepare(
    `INSERT INTO context_caps (root_id, cap, set_at) VALUES (?, ?, ?)
     ON CONFLICT(root_id) DO UPDATE SET cap = excluded.cap, set_at = excluded.set_at`,
  );
  const get = db.prepare<[string], { cap: number; set_at: number }>(
    "SELECT cap, set_at FROM context_caps WHERE root_id = ?",
  );
  const del = db.prepare("DELETE FROM context_caps WHERE root_id = ?");
  return {
    set(rootId: string, cap: number, at: number): void {
      set.run(rootId, Math.max(1, Math.floor(cap)), at);
    },
    get(rootId: string): number | null {
      return get.get(rootId)?.cap ?? null;
    },
    /** The cap with when it was set, or null. */
    row(rootId: string): { cap: number; set_at: number } | null {
      return get.get(rootId) ?? null;
    },
    delete(rootId: string): void {
      del.run(rootId);
    },
  };
}
export type CapsTable = ReturnType<typeof capsTable>;
