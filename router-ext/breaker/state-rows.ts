// breaker_state: one row per model, its phase and when its evidence counts again.
import type { Sql } from "../store/sql.ts";
import type { BreakerPhase, BreakerState } from "./state.ts";

/** A model's state plus when its evidence starts counting again (after a close or a Resume). */
export interface StoredState extends BreakerState {
  /** Stalls before this instant no longer count toward a new trip (null: all in the window count). */
  quietSince: number | null;
  updatedAt: number;
}

interface StateRow {
  model: string;
  phase: BreakerPhase;
  trips: number;
  opened_at: number | null;
  until: number | null;
  probe_until: number | null;
  resumed_by: string | null;
  resumed_at: number | null;
  quiet_since: number | null;
  updated_at: number;
}

const num = (v: number | null): number | null => (v === null ? null : Number(v));

function fromRow(r: StateRow): StoredState {
  return {
    model: r.model,
    phase: r.phase,
    trips: Number(r.trips),
    openedAt: num(r.opened_at),
    until: num(r.until),
    probeUntil: num(r.probe_until),
    resumedBy: r.resumed_by,
    resumedAt: num(r.resumed_at),
    quietSince: num(r.quiet_since),
    updatedAt: Number(r.updated_at),
  };
}

export function breakerStateRows(sql: Sql) {
  return {
    async all(): Promise<StoredState[]> {
      return (await sql.all<StateRow>("SELECT * FROM breaker_state ORDER BY model")).map(fromRow);
    },
    async upsert(s: StoredState): Promise<void> {
      await sql.run(
        `INSERT INTO breaker_state (model, phase, trips, opened_at, until, probe_until, resumed_by, resumed_at, quiet_since, updated_at)
         VALUES (@model, @phase, @trips, @openedAt, @until, @probeUntil, @resumedBy, @resumedAt, @quietSince, @updatedAt)
         ON CONFLICT(model) DO UPDATE SET phase = excluded.phase, trips = excluded.trips, opened_at = excluded.opened_at,
           until = excluded.until, probe_until = excluded.probe_until, resumed_by = excluded.resumed_by,
           resumed_at = excluded.resumed_at, quiet_since = excluded.quiet_since, updated_at = excluded.updated_at`,
        {
          model: s.model,
          phase: s.phase,
          trips: s.trips,
          openedAt: s.openedAt,
          until: s.until,
          probeUntil: s.probeUntil,
          resumedBy: s.resumedBy,
          resumedAt: s.resumedAt,
          quietSince: s.quietSince,
          updatedAt: s.updatedAt,
        },
      );
    },
  };
}
