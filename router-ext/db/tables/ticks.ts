// watchdog_ticks: what each watchdog tick saw (servers, opencode's database, sessions, blind).
import type Database from "better-sqlite3";
import type { WatchdogTick } from "../../../shared/index.ts";
import type { WatchdogTickView } from "../../api/schemas.ts";

export function ticksTable(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO watchdog_ticks (at, received_at, servers, sessions, flagged, blind, db)
     VALUES (@at, @received_at, @servers, @sessions, @flagged, @blind, @db)`,
  );
  const last = db.prepare<[], Omit<WatchdogTickView, "blind"> & { blind: number }>(
    "SELECT at, received_at, servers, sessions, flagged, blind, db FROM watchdog_ticks ORDER BY seq DESC LIMIT 1",
  );
  // The newest tick is kept whatever its age, so a dead watchdog shows as late, not as never seen.
  const prune = db.prepare(
    "DELETE FROM watchdog_ticks WHERE received_at < ? AND seq < (SELECT MAX(seq) FROM watchdog_ticks)",
  );
  return {
    insert(t: WatchdogTick, receivedAt: number): void {
      insert.run({
        at: t.at,
        received_at: receivedAt,
        servers: t.servers,
        sessions: t.sessions,
        flagged: t.flagged,
        blind: t.blind ? 1 : 0,
        db: t.db ?? null,
      });
    },
    last(): WatchdogTickView | null {
      const r = last.get();
      return r ? { ...r, blind: r.blind === 1 } : null;
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
  };
}
export type TicksTable = ReturnType<typeof ticksTable>;
