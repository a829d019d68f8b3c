// Schema for the operator's view (issue 15): the admin's marks on flagged
// sessions, the heartbeats' spend samples for the session page, and the
// evidence a transition carries. Versions 151, 153, 155, ... (issue 13 uses
// 101, 103, ...). Ids, verdicts, counts and coarse targets only.
import type { Migration } from "./migration.ts";

export const OPERATOR_MIGRATIONS: readonly Migration[] = [
  {
    version: 151,
    name: "session_marks",
    // One mark per session (the latest wins): an admin's "false alarm" or
    // "confirmed loop", with who and when; calibrate reads them as labels.
    sql: `
CREATE TABLE session_marks (
  session_id TEXT PRIMARY KEY,
  root_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('false_alarm', 'confirmed_loop')),
  verdict TEXT NOT NULL,
  reason TEXT,
  marked_by TEXT NOT NULL,
  marked_at INTEGER NOT NULL
) STRICT;
CREATE INDEX session_marks_at ON session_marks(marked_at);
`,
  },
  {
    version: 153,
    name: "session_samples",
    // A heartbeat's numbers per session, kept when they changed: turns since
    // landed, the last landed change and the context size over time.
    sql: `
CREATE TABLE session_samples (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  session_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  turns_since_landed INTEGER NOT NULL,
  last_landed_at INTEGER,
  context_tokens INTEGER NOT NULL
) STRICT;
CREATE INDEX session_samples_session ON session_samples(session_id, at);
CREATE INDEX session_samples_at ON session_samples(at);
`,
  },
  {
    version: 155,
    name: "transitions_evidence",
    // The wire's optional evidence (coarse targets and counts) as JSON; NULL from older plugins.
    sql: "ALTER TABLE transitions ADD COLUMN evidence TEXT;",
  },
  {
    version: 157,
    name: "sessions_current_figures",
    // What the readout shows of a session beyond its verdict: the heartbeat's
    // current calls and landed changes (NULL until a plugin sends them), and
    // the title, folder and creation time opencode shows the user.
    sql: `
ALTER TABLE sessions ADD COLUMN calls INTEGER;
ALTER TABLE sessions ADD COLUMN landed INTEGER;
ALTER TABLE sessions ADD COLUMN title TEXT;
ALTER TABLE sessions ADD COLUMN directory TEXT;
ALTER TABLE sessions ADD COLUMN created_at INTEGER;
`,
  },
];
