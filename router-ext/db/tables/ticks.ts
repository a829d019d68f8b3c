// watchdog_ticks: what each watchdog tick saw (servers, opencode's database, sessions, blind).
import type { WatchdogTick } from "../../../shared/index.ts";
import type { WatchdogTickView } from "../../api/schemas.ts";
import type { Sql } from "../../store/sql.ts";

export function ticksTable(sql: Sql) {
  return {
    async insert(t: WatchdogTick, receivedAt: number): Promise<void> {
      await sql.run(
        `INSERT INTO watchdog_ticks (at, received_at, servers, sessions, flagged, blind, db)
         VALUES (@at, @received_at, @servers, @sessions, @flagged, @blind, @db)`,
        {
          at: t.at,
          received_at: receivedAt,
          servers: t.servers,
          sessions: t.sessions,
          flagged: t.flagged,
          blind: t.blind ? 1 : 0,
          db: t.db ?? null,
        },
      );
    },
    async last(): Promise<WatchdogTickView | null> {
      const r = await sql.get<Omit<WatchdogTickView, "blind"> & { blind: number }>(
        "SELECT at, received_at, servers, sessions, flagged, blind, db FROM watchdog_ticks ORDER BY seq DESC LIMIT 1",
      );
      return r ? { ...r, blind: r.blind === 1 } : null;
    },
    /** The newest tick is kept whatever its age, so a dead watchdog shows as late, not as never seen. */
    async prune(cutoff: number): Promise<number> {
      const r = await sql.run(
        "DELETE FROM watchdog_ticks WHERE received_at < ? AND seq < (SELECT MAX(seq) FROM watchdog_ticks)",
        [cutoff],
      );
      return r.changes;
    },
  };
}
export type TicksTable = ReturnType<typeof ticksTable>;
