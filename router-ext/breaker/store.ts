// The breaker's durable state over the store's Sql (any engine): one row per
// model (its phase, state-rows.ts), every trip with its evidence
// (trip-rows.ts), a log of phase changes (phase-log.ts), and the evidence it
// weighs (evidence-reads.ts). Tables from db/migrations-breaker.ts, in the
// router's own database, so a restart keeps an open breaker open. Ids,
// models, counts and rates only.
import type { Sql } from "../store/sql.ts";
import { breakerEvidence } from "./evidence-reads.ts";
import { breakerPhaseLog, type PhaseChange } from "./phase-log.ts";
import type { ServedEvidence, StallRecord } from "./rule.ts";
import { type BreakerPhase, closedState } from "./state.ts";
import { breakerStateRows, type StoredState } from "./state-rows.ts";
import { breakerTripRows, type NewTrip, type TripRecord } from "./trip-rows.ts";

export type { PhaseChange } from "./phase-log.ts";
export type { StoredState } from "./state-rows.ts";
export type { NewTrip, TripEvidence, TripRecord } from "./trip-rows.ts";

const clampLimit = (limit: number) => Math.max(1, Math.min(1000, Math.floor(limit)));

export class BreakerStore {
  private readonly stateRows;
  private readonly tripRows;
  private readonly phaseLog;
  private readonly evidence;

  /**
   * `changed` runs inside each state-changing transaction (save, recordTrip):
   * on PostgreSQL it tells the other replicas, delivered only on commit.
   * `reads` runs the evidence reads (the window's requests: tens of ms on a
   * busy router), off the event loop where the store can (SqlStore.reads).
   */
  constructor(
    readonly sql: Sql,
    private readonly changed: (q: Sql) => Promise<void> = async () => {},
    reads: Sql = sql,
  ) {
    this.stateRows = breakerStateRows(sql);
    this.tripRows = breakerTripRows(sql);
    this.phaseLog = breakerPhaseLog(sql);
    this.evidence = breakerEvidence(reads);
  }

  states(): Promise<StoredState[]> {
    return this.stateRows.all();
  }

  async state(model: string): Promise<StoredState> {
    return (
      (await this.states()).find((s) => s.model === model) ?? {
        ...closedState(model),
        quietSince: null,
        updatedAt: 0,
      }
    );
  }

  /** Saves a model's state; logs the phase change when there is one. One transaction. */
  save(next: StoredState, prevPhase: BreakerPhase, by: string): Promise<void> {
    return this.sql.tx(async (q) => {
      await breakerStateRows(q).upsert(next);
      if (prevPhase !== next.phase)
        await breakerPhaseLog(q).add({
          model: next.model,
          from_phase: prevPhase,
          to_phase: next.phase,
          at: next.updatedAt,
          by,
        });
      await this.changed(q);
    });
  }

  /** Records a trip and the state it opened, in one transaction; the trip's seq. */
  recordTrip(trip: NewTrip, next: StoredState): Promise<number> {
    return this.sql.tx(async (q) => {
      const seq = await breakerTripRows(q).add(trip);
      await breakerStateRows(q).upsert(next);
      await breakerPhaseLog(q).add({
        model: next.model,
        from_phase: trip.previous,
        to_phase: next.phase,
        at: trip.at,
        by: "breaker",
      });
      await this.changed(q);
      return seq;
    });
  }

  /** Drops trips and phase changes older than `cutoff`; the current state of each model stays. */
  prune(cutoff: number): Promise<{ trips: number; changes: number }> {
    return this.sql.tx(async (q) => ({
      trips: await breakerTripRows(q).prune(cutoff),
      changes: await breakerPhaseLog(q).prune(cutoff),
    }));
  }

  trips(limit = 100): Promise<TripRecord[]> {
    return this.tripRows.latest(clampLimit(limit));
  }

  changes(limit = 100): Promise<PhaseChange[]> {
    return this.phaseLog.latest(clampLimit(limit));
  }

  served(from: number, to: number, stalled: readonly string[]): Promise<ServedEvidence> {
    return this.evidence.served(from, to, stalled);
  }

  stalls(from: number, to: number): Promise<StallRecord[]> {
    return this.evidence.stalls(from, to);
  }
}
