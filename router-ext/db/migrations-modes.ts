// Schema for the recovery modes (auto_compact, auto_limit_context, auto_recover). Odd versions from 3.
import type { Migration } from "./migration.ts";

export const MODES_MIGRATIONS: readonly Migration[] = [
  {
    version: 3,
    name: "modes",
    sql: `
CREATE TABLE mode_directives (
  id TEXT PRIMARY KEY,
  action TEXT NOT NULL CHECK (action IN ('compact', 'recover')),
  session_id TEXT NOT NULL,
  root_id TEXT NOT NULL,
  report TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  sent_count INTEGER NOT NULL DEFAULT 0,
  last_sent_at INTEGER,
  done_at INTEGER,
  ok INTEGER,
  error TEXT
) STRICT;
CREATE INDEX mode_directives_open ON mode_directives(done_at, created_at);

CREATE TABLE context_caps (
  root_id TEXT PRIMARY KEY,
  cap INTEGER NOT NULL,
  set_at INTEGER NOT NULL
) STRICT;

CREATE TABLE refused_conversations (
  conversation TEXT NOT NULL,
  scope TEXT NOT NULL,
  refusal_at INTEGER NOT NULL,
  first_at INTEGER NOT NULL,
  last_at INTEGER NOT NULL,
  requests INTEGER NOT NULL,
  PRIMARY KEY (conversation, scope, refusal_at)
) STRICT;
`,
  },
  {
    version: 5,
    name: "sessions_cannot_act",
    // Why the mode could not act on the session's last detection (no live plugin), or NULL.
    sql: "ALTER TABLE sessions ADD COLUMN cannot_act TEXT;",
  },
];
