// Versioned schema migrations, applied in order at start-up inside one
// transaction each. A migration is never edited once shipped: add a new one.
// Nothing here stores content: ids, verdicts, counts, money, coarse targets
// and the deterministic incident report (built from those) only.
import type Database from "better-sqlite3";
import type { Migration } from "./migration.ts";
import { BREAKER_MIGRATIONS } from "./migrations-breaker.ts";
import { LINK_MIGRATIONS } from "./migrations-link.ts";
import { MODES_MIGRATIONS } from "./migrations-modes.ts";
import { OPERATOR_MIGRATIONS } from "./migrations-operator.ts";
import { REPLICA_MIGRATIONS } from "./migrations-replicas.ts";
import { SECURITY_MIGRATIONS } from "./migrations-security.ts";
import { WATCHDOG_MIGRATIONS } from "./migrations-watchdog.ts";

export type { Migration } from "./migration.ts";

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: "initial",
    sql: `
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY,
  parent_id TEXT,
  root_id TEXT NOT NULL,
  agent TEXT,
  verdict TEXT NOT NULL DEFAULT 'ok',
  worst TEXT NOT NULL DEFAULT 'ok',
  flags INTEGER NOT NULL DEFAULT 0,
  stage TEXT NOT NULL DEFAULT 'none',
  reason TEXT,
  report TEXT,
  verdict_at INTEGER,
  turns_since_landed INTEGER NOT NULL DEFAULT 0,
  usd_since_landed REAL NOT NULL DEFAULT 0,
  last_landed_at INTEGER,
  context_tokens INTEGER NOT NULL DEFAULT 0,
  stats_at INTEGER,
  top_target TEXT,
  top_target_count INTEGER NOT NULL DEFAULT 0,
  source TEXT NOT NULL,
  plugin_version TEXT,
  plugin_seen_at INTEGER,
  first_seen_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_root ON sessions(root_id);
CREATE INDEX sessions_parent ON sessions(parent_id);
CREATE INDEX sessions_last_seen ON sessions(last_seen_at);

CREATE TABLE transitions (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  root_id TEXT NOT NULL,
  source TEXT NOT NULL,
  verdict TEXT NOT NULL,
  previous TEXT NOT NULL,
  reason TEXT,
  at INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  signals TEXT NOT NULL,
  top_target TEXT,
  top_target_count INTEGER NOT NULL,
  plugin_version TEXT,
  second_opinion TEXT
) STRICT;
CREATE INDEX transitions_at ON transitions(at);
CREATE INDEX transitions_received ON transitions(received_at);
CREATE INDEX transitions_root_at ON transitions(root_id, at);

CREATE TABLE refusals (
  scope TEXT NOT NULL CHECK (scope IN ('tree', 'session')),
  key TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('stopped', 'running')),
  reason TEXT,
  changed_by TEXT NOT NULL,
  changed_at INTEGER NOT NULL,
  PRIMARY KEY (scope, key)
) STRICT;

CREATE TABLE refusal_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL,
  key TEXT NOT NULL,
  state TEXT NOT NULL,
  reason TEXT,
  changed_by TEXT NOT NULL,
  changed_at INTEGER NOT NULL
) STRICT;
CREATE INDEX refusal_log_at ON refusal_log(changed_at);

CREATE TABLE requests (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  conversation TEXT,
  root_id TEXT,
  agent TEXT,
  parent TEXT,
  model TEXT,
  status INTEGER NOT NULL,
  prompt_tokens INTEGER,
  completion_tokens INTEGER,
  cached_tokens INTEGER,
  cost_usd REAL,
  context_tokens INTEGER,
  started_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  refused INTEGER NOT NULL,
  plugin_version TEXT
) STRICT;
CREATE INDEX requests_conversation ON requests(conversation, started_at);
CREATE INDEX requests_started ON requests(started_at);

CREATE TABLE knob_overrides (
  path TEXT PRIMARY KEY,
  value TEXT NOT NULL,
  set_by TEXT NOT NULL,
  set_at INTEGER NOT NULL
) STRICT;

CREATE TABLE plugin_instances (
  instance_id TEXT PRIMARY KEY,
  plugin_version TEXT NOT NULL,
  sessions INTEGER NOT NULL,
  first_seen_at INTEGER NOT NULL,
  last_seen_at INTEGER NOT NULL
) STRICT;

CREATE TABLE watchdog_ticks (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  received_at INTEGER NOT NULL,
  servers INTEGER NOT NULL,
  sessions INTEGER NOT NULL,
  flagged INTEGER NOT NULL,
  blind INTEGER NOT NULL
) STRICT;
CREATE INDEX watchdog_ticks_received ON watchdog_ticks(received_at);

CREATE TABLE tree_modes (
  root_id TEXT PRIMARY KEY,
  state TEXT NOT NULL,
  updated_at INTEGER NOT NULL
) STRICT;

CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) STRICT;
`,
  },
  // Feature migrations live next to their owners' files; versions never collide
  // (breaker: 2, 4, 6, ...; modes: 3, 5, 7, ...; operator's view: 151, 153, ...; watchdog: 181, ...;
  // gate: 201, 203, ...; link: 251, ...; replicas: 301, ...)
  // and are applied in version order.
  ...BREAKER_MIGRATIONS,
  ...MODES_MIGRATIONS,
  ...OPERATOR_MIGRATIONS,
  ...SECURITY_MIGRATIONS,
  ...WATCHDOG_MIGRATIONS,
  {
    // The gate kept the header's word for the session id; every other table says session_id.
    version: 201,
    name: "session id named session_id in the gate's tables",
    sql: `
ALTER TABLE requests RENAME COLUMN conversation TO session_id;
DROP INDEX requests_conversation;
CREATE INDEX requests_session ON requests(session_id, started_at);
ALTER TABLE refused_conversations RENAME TO refused_sessions;
ALTER TABLE refused_sessions RENAME COLUMN conversation TO session_id;
`,
  },
  {
    // The gate's facts read each session's latest compaction (router-ext/db/gate-facts.ts):
    // compactions are rare, so this index holds few rows and costs a request's write nothing.
    version: 203,
    name: "the sessions' compactions indexed for the gate's facts",
    sql: `
CREATE INDEX requests_compactions ON requests(session_id, started_at) WHERE agent = 'compaction';
`,
  },
  ...LINK_MIGRATIONS,
  ...REPLICA_MIGRATIONS,
];

/**
 * Applies every migration the database has not recorded, in version order.
 * Returns the versions applied. Keyed on the recorded set, not the highest
 * version, because feature migrations interleave (breaker even, modes odd).
 */
export function migrate(db: Database.Database, migrations: readonly Migration[] = MIGRATIONS): number[] {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT",
  );
  const current =
    (db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0;
  const known = Math.max(0, ...migrations.map((m) => m.version));
  if (current > known) {
    throw new Error(
      `database schema version ${current} is newer than this stallguard (knows ${known}): upgrade stallguard`,
    );
  }
  const done = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as Array<{ version: number }>).map(
      (r) => r.version,
    ),
  );
  const applied: number[] = [];
  const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (done.has(m.version)) continue;
    db.transaction(() => {
      db.exec(m.sql);
      record.run(m.version, m.name, Date.now());
    })();
    applied.push(m.version);
  }
  return applied;
}

/** The schema version a database is at. */
export function schemaVersion(db: Database.Database): number {
  return (db.prepare("SELECT MAX(version) AS v FROM schema_migrations").get() as { v: number | null }).v ?? 0;
}
