// counters: durable figures for /metrics (they survive restarts).
import type { Sql } from "../../store/sql.ts";

export function countersTable(sql: Sql) {
  return {
    async bump(name: string, by = 1): Promise<void> {
      await sql.run(
        `INSERT INTO counters (name, value) VALUES (?, ?)
         ON CONFLICT(name) DO UPDATE SET value = counters.value + excluded.value`,
        [name, by],
      );
    },
    async all(): Promise<Record<string, number>> {
      const out: Record<string, number> = {};
      for (const r of await sql.all<{ name: string; value: number }>("SELECT name, value FROM counters"))
        out[r.name] = r.value;
      return out;
    },
  };
}
export type CountersTable = ReturnType<typeof countersTable>;
