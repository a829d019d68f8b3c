// Schema for the gate's batched writes: the batches already written, so a
// batch written twice (its commit went through but the answer was lost: the
// writer thread died after COMMIT, or PostgreSQL's connection broke during
// it) adds nothing the second time (router-ext/db/gate-batch.ts). Versions 351, 353, ...
import type { Migration } from "./migration.ts";

export const GATE_MIGRATIONS: readonly Migration[] = [
  {
    version: 351,
    name: "gate batches written once",
    // One row per committed batch: its id and when it was made (kept a day: router-ext/store/sql-store.ts).
    sql: `
CREATE TABLE gate_batches (
  id TEXT PRIMARY KEY,
  made_at INTEGER NOT NULL
) STRICT;
CREATE INDEX gate_batches_made ON gate_batches(made_at);
`,
  },
];
