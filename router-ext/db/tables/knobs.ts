// knob_overrides: the admin page's knob changes, as JSON, with who and when.
import type { Sql } from "../../store/sql.ts";

export interface KnobOverride {
  path: string;
  value: unknown;
  set_by: string;
  set_at: number;
}

export function knobsTable(sql: Sql) {
  return {
    async all(): Promise<KnobOverride[]> {
      const rows = await sql.all<{ path: string; value: string; set_by: string; set_at: number }>(
        "SELECT path, value, set_by, set_at FROM knob_overrides ORDER BY path",
      );
      return rows.map((r) => ({ ...r, value: JSON.parse(r.value) as unknown }));
    },
    async set(path: string, value: unknown, by: string, at: number): Promise<void> {
      await sql.run(
        `INSERT INTO knob_overrides (path, value, set_by, set_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(path) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, set_at = excluded.set_at`,
        [path, JSON.stringify(value), by, at],
      );
    },
    async delete(path: string): Promise<boolean> {
      return (await sql.run("DELETE FROM knob_overrides WHERE path = ?", [path])).changes > 0;
    },
  };
}
export type KnobsTable = ReturnType<typeof knobsTable>;
