// Schema for the behaviour breaker (router-ext/breaker/). Even versions only.
// Ids, models, counts and rates only: never a prompt, a reply or a report.
import type { Migration } from "./migration.ts";

export const BREAKER_MIGRATIONS: readonly Migration[] = [
  {
    version: 2,
    name: "breaker",
    sql: `
CREATE TABLE breaker_state (
  model TEXT PRIMARY KEY,
  phase TEXT NOT NULL CHECK (phase IN ('closed', 'open', 'half_open')),
  trips INTEGER NOT NULL,
  opened_at INTEGER,
  until INTEGER,
  probe_until INTEGER,
  resumed_by TEXT,
  resumed_at INTEGER,
  quiet_since INTEGER,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE breaker_trips (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  model TEXT NOT NULL,
  at INTEGER NOT NULL,
  previous TEXT NOT NULL,
  trips INTEGER NOT NULL,
  cooldown_ms INTEGER NOT NULL,
  until INTEGER NOT NULL,
  window_ms INTEGER NOT NULL,
  window_from INTEGER NOT NULL,
  min_sessions INTEGER NOT NULL,
  rate_ratio REAL NOT NULL,
  served_trees INTEGER NOT NULL,
  stalled_trees INTEGER NOT NULL,
  rate REAL NOT NULL,
  others_served INTEGER NOT NULL,
  others_stalled INTEGER NOT NULL,
  others_rate REAL NOT NULL,
  ratio REAL NOT NULL,
  fallback TEXT,
  evidence TEXT NOT NULL
) STRICT;
CREATE INDEX breaker_trips_model_at ON breaker_trips(model, at);

CREATE TABLE breaker_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  model TEXT NOT NULL,
  from_phase TEXT NOT NULL,
  to_phase TEXT NOT NULL,
  at INTEGER NOT NULL,
  by TEXT NOT NULL
) STRICT;
CREATE INDEX breaker_log_at ON breaker_log(at);
`,
  },
];
