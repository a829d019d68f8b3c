// The breaker's durable state: one row per model (its phase), every trip with
// its evidence, and a log of phase changes. Lives on the same better-sqlite3
// handle as the router's Store (tables from db/migrations-breaker.ts), so a
// restart keeps an open breaker open. Ids, models, counts and rates only.
import type Database from "better-sqlite3";
import type { BreakerTripView } from "../api/schemas.ts";
import type { ServedRecord, StallRecord } from "./rule.ts";
import { type BreakerPhase, type BreakerState, closedState } from "./state.ts";

/** A model's state plus when its evidence starts counting again (after a close or a Resume). */
export interface StoredState extends BreakerState {
  /** Stalls before this instant no longer count toward a new trip (null: all in the window count). */
  quietSince: number | null;
  updatedAt: number;
}

/** A trip with its evidence, as stored and as GET /api/breaker shows it. */
export type TripRecord = BreakerTripView;
export type TripEvidence = TripRecord["evidence"][number];

export type NewTrip = Omit<TripRecord, "seq">;

export interface PhaseChange {
  seq: number;
  model: string;
  from_phase: BreakerPhase;
  to_phase: BreakerPhase;
  at: number;
  by: string;
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

type TripRow = Omit<TripRecord, "evidence"> & { evidence: string };

function fromRow(r: StateRow): StoredState {
  return {
    model: r.model,
    phase: r.phase,
    trips: r.trips,
    openedAt: r.opened_at,
    until: r.until,
    probeUntil: r.probe_until,
    resumedBy: r.resumed_by,
    resumedAt: r.resumed_at,
    quietSince: r.quiet_since,
    updatedAt: r.updated_at,
  };
}

function parseEvidence(text: string): TripEvidence[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? (v as TripEvidence[]) : [];
  } catch {
    return [];
  }
}

export class BreakerStore {
  private readonly q;

  constructor(readonly db: Database.Database) {
    this.q = {
      states: db.prepare<[], StateRow>("SELECT * FROM breaker_state ORDER BY model"),
      upsert: db.prepare(
        `INSERT INTO breaker_state (model, phase, trips, opened_at, until, probe_until, resumed_by, resumed_at, quiet_since, updated_at)
         VALUES (@model, @phase, @trips, @openedAt, @until, @probeUntil, @resumedBy, @resumedAt, @quietSince, @updatedAt)
         ON CONFLICT(model) DO UPDATE SET phase = excluded.phase, trips = excluded.trips, opened_at = excluded.opened_at,
           until = excluded.until, probe_until = excluded.probe_until, resumed_by = excluded.resumed_by,
           resumed_at = excluded.resumed_at, quiet_since = excluded.quiet_since, updated_at = excluded.updated_at`,
      ),
      insertTrip: db.prepare(
        `INSERT INTO breaker_trips (model, at, previous, trips, cooldown_ms, until, window_ms, window_from, min_sessions,
           rate_ratio, served_trees, stalled_trees, rate, others_served, others_stalled, others_rate, ratio, fallback, evidence)
         VALUES (@model, @at, @previous, @trips, @cooldown_ms, @until, @window_ms, @window_from, @min_sessions,
           @rate_ratio, @served_trees, @stalled_trees, @rate, @others_served, @others_stalled, @others_rate, @ratio, @fallback, @evidence)`,
      ),
      trips: db.prepare<[number], TripRow>("SELECT * FROM breaker_trips ORDER BY seq DESC LIMIT ?"),
      log: db.prepare(
        "INSERT INTO breaker_log (model, from_phase, to_phase, at, by) VALUES (@model, @from, @to, @at, @by)",
      ),
      changes: db.prepare<[number], PhaseChange>("SELECT * FROM breaker_log ORDER BY seq DESC LIMIT ?"),
      served: db.prepare<
        [number, number],
        { model: string; session_id: string; root_id: string; at: number }
      >(
        `SELECT model, session_id, COALESCE(root_id, session_id) AS root_id, started_at AS at FROM requests
         WHERE started_at >= ? AND started_at <= ? AND refused = 0 AND model IS NOT NULL AND session_id IS NOT NULL`,
      ),
      stalls: db.prepare<
        [number, number],
        {
          session_id: string;
          root_id: string;
          verdict: "stalling" | "looping";
          at: number;
          since: number | null;
        }
      >(
        `SELECT session_id, root_id, verdict, at, json_extract(signals, '$.last_landed_at') AS since FROM transitions
         WHERE verdict IN ('stalling', 'looping') AND at >= ? AND at <= ?`,
      ),
    };
  }

  states(): StoredState[] {
    return this.q.states.all().map(fromRow);
  }

  state(model: string): StoredState {
    return (
      this.states().find((s) => s.model === model) ?? {
        ...closedState(model),
        quietSince: null,
        updatedAt: 0,
      }
    );
  }

  /** Saves a model's state; logs the phase change when there is one. */
  save(next: StoredState, prevPhase: BreakerPhase, by: string): void {
    this.db.transaction(() => {
      this.q.upsert.run(next);
      if (prevPhase !== next.phase)
        this.q.log.run({ model: next.model, from: prevPhase, to: next.phase, at: next.updatedAt, by });
    })();
  }

  /** Records a trip and the state it opened, in one transaction. */
  recordTrip(trip: NewTrip, next: StoredState): number {
    return this.db.transaction(() => {
      const r = this.q.insertTrip.run({ ...trip, evidence: JSON.stringify(trip.evidence) });
      this.q.upsert.run(next);
      this.q.log.run({ model: next.model, from: trip.previous, to: next.phase, at: trip.at, by: "breaker" });
      return Number(r.lastInsertRowid);
    })();
  }

  /** Drops trips and phase changes older than `cutoff`; the current state of each model stays. */
  prune(cutoff: number): { trips: number; changes: number } {
    return this.db.transaction(() => ({
      trips: this.db.prepare("DELETE FROM breaker_trips WHERE at < ?").run(cutoff).changes,
      changes: this.db.prepare("DELETE FROM breaker_log WHERE at < ?").run(cutoff).changes,
    }))();
  }

  trips(limit = 100): TripRecord[] {
    return this.q.trips
      .all(Math.max(1, Math.min(1000, Math.floor(limit))))
      .map((r) => ({ ...r, evidence: parseEvidence(r.evidence) }));
  }

  changes(limit = 100): PhaseChange[] {
    return this.q.changes.all(Math.max(1, Math.min(1000, Math.floor(limit))));
  }

  /** The gate's request records in [from, to]: which model served which session, when. */
  served(from: number, to: number): ServedRecord[] {
    return this.q.served
      .all(from, to)
      .map((r) => ({ model: r.model, sessionId: r.session_id, rootId: r.root_id, at: r.at }));
  }

  /**
   * Stall verdicts in [from, to]; each one's stall window starts at the session's
   * last landed change, else at 0 (the session's start: its first request).
   */
  stalls(from: number, to: number): StallRecord[] {
    return this.q.stalls.all(from, to).map((r) => ({
      sessionId: r.session_id,
      rootId: r.root_id,
      verdict: r.verdict,
      at: r.at,
      since: typeof r.since === "number" ? r.since : 0,
    }));
  }
}
