// counters: durable figures for /metrics (they survive restarts).
import type Database from "better-sqlite3";

export function countersTable(db: Database.Database) {
  const bump = db.prepare(
    "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
  );
  const all = db.prepare<[], { name: string; value: number }>("SELECT name, value FROM counters");
  return {
    bump(name: string, by = 1): void {
      bump.run(name, by);
    },
    all(): Record<string, number> {
      const out: Record<string, number> = {};
      for (const r of all.all()) out[r.name] = r.value;
      return out;
    },
  };
}
export type CountersTable = ReturnType<typeof countersTable>;
