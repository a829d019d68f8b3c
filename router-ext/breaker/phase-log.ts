// breaker_log: every phase change of a model, who made it and when.
import type { Sql } from "../store/sql.ts";
import type { BreakerPhase } from "./state.ts";

export interface PhaseChange {
  seq: number;
  model: string;
  from_phase: BreakerPhase;
  to_phase: BreakerPhase;
  at: number;
  by: string;
}

export function breakerPhaseLog(sql: Sql) {
  return {
    async add(c: Omit<PhaseChange, "seq">): Promise<void> {
      await sql.run(
        "INSERT INTO breaker_log (model, from_phase, to_phase, at, by) VALUES (@model, @from_phase, @to_phase, @at, @by)",
        { ...c },
      );
    },
    /** The newest `limit` changes, newest first. */
    async latest(limit: number): Promise<PhaseChange[]> {
      const rows = await sql.all<PhaseChange>("SELECT * FROM breaker_log ORDER BY seq DESC LIMIT ?", [limit]);
      return rows.map((r) => ({ ...r, seq: Number(r.seq), at: Number(r.at) }));
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM breaker_log WHERE at < ?", [cutoff])).changes;
    },
  };
}
