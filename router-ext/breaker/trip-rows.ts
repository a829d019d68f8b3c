// breaker_trips: every trip with its evidence (session and tree ids, verdicts, times).
import type { BreakerTripView } from "../api/schemas.ts";
import type { Sql } from "../store/sql.ts";

/** A trip with its evidence, as stored and as GET /api/breaker shows it. */
export type TripRecord = BreakerTripView;
export type TripEvidence = TripRecord["evidence"][number];
export type NewTrip = Omit<TripRecord, "seq">;

type TripRow = Omit<TripRecord, "evidence"> & { evidence: string };

const INTEGERS = [
  "seq",
  "at",
  "trips",
  "cooldown_ms",
  "until",
  "window_ms",
  "window_from",
  "min_sessions",
  "served_trees",
  "stalled_trees",
  "others_served",
  "others_stalled",
] as const;
const REALS = ["rate_ratio", "rate", "others_rate", "ratio"] as const;

function parseEvidence(text: string): TripEvidence[] {
  try {
    const v = JSON.parse(text) as unknown;
    return Array.isArray(v) ? (v as TripEvidence[]) : [];
  } catch {
    return [];
  }
}

/** A row as a record; numbers made numbers (an engine may hand out 64-bit integers as text). */
function fromRow(r: TripRow): TripRecord {
  const out = { ...r, evidence: parseEvidence(r.evidence) } as TripRecord;
  for (const k of [...INTEGERS, ...REALS]) (out as Record<string, unknown>)[k] = Number(r[k]);
  return out;
}

export function breakerTripRows(sql: Sql) {
  return {
    /** Stores a trip; its seq. */
    async add(trip: NewTrip): Promise<number> {
      const row = await sql.get<{ seq: number | string }>(
        `INSERT INTO breaker_trips (model, at, previous, trips, cooldown_ms, until, window_ms, window_from, min_sessions,
           rate_ratio, served_trees, stalled_trees, rate, others_served, others_stalled, others_rate, ratio, fallback, evidence)
         VALUES (@model, @at, @previous, @trips, @cooldown_ms, @until, @window_ms, @window_from, @min_sessions,
           @rate_ratio, @served_trees, @stalled_trees, @rate, @others_served, @others_stalled, @others_rate, @ratio, @fallback, @evidence)
         RETURNING seq`,
        { ...trip, evidence: JSON.stringify(trip.evidence) },
      );
      return Number(row?.seq);
    },
    /** The newest `limit` trips, newest first. */
    async latest(limit: number): Promise<TripRecord[]> {
      return (await sql.all<TripRow>("SELECT * FROM breaker_trips ORDER BY seq DESC LIMIT ?", [limit])).map(
        fromRow,
      );
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM breaker_trips WHERE at < ?", [cutoff])).changes;
    },
  };
}
