// gate_batches: the gate's batches already committed, so a batch written a
// second time (its commit's answer was lost) adds nothing (gate-batch.ts).
import type { Sql } from "../../store/sql.ts";

export function gateBatchesTable(sql: Sql) {
  return {
    /** True when this write is the batch's first (the caller writes it); false when it was committed before. */
    async claim(id: string, madeAt: number): Promise<boolean> {
      const row = await sql.get<{ id: string }>(
        "INSERT INTO gate_batches (id, made_at) VALUES (?, ?) ON CONFLICT (id) DO NOTHING RETURNING id",
        [id, madeAt],
      );
      return row !== undefined;
    },
    /** Forgets batches made before `cutoff` (a retry comes within seconds of the database answering again). */
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM gate_batches WHERE made_at < ?", [cutoff])).changes;
    },
  };
}
export type GateBatchesTable = ReturnType<typeof gateBatchesTable>;
