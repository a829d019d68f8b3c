// knob_overrides: the admin page's knob changes, as JSON, with who and when.
import type Database from "better-sqlite3";

export interface KnobOverride {
  path: string;
  value: unknown;
  set_by: string;
  set_at: number;
}

export function knobsTable(db: Database.Database) {
  const all = db.prepare<[], { path: string; value: string; set_by: string; set_at: number }>(
    "SELECT path, value, set_by, set_at FROM knob_overrides ORDER BY path",
  );
  const set = db.prepare(
    `INSERT INTO knob_overrides (path, value, set_by, set_at) VALUES (?, ?, ?, ?)
     ON CONFLICT(path) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, set_at = excluded.set_at`,
  );
  const del = db.prepare("DELETE FROM knob_overrides WHERE path = ?");
  return {
    all(): KnobOverride[] {
      return all.all().map((r) => ({ ...r, value: JSON.parse(r.value) as unknown }));
    },
    set(path: string, value: unknown, by: string, at: number): void {
      set.run(path, JSON.stringify(value), by, at);
    },
    delete(path: string): boolean {
      return del.run(path).changes > 0;
    },
  };
}
export type KnobsTable = ReturnType<typeof knobsTable>;
