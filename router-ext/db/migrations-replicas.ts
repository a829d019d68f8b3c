// Schema for replicas on one database (issue 21): the claim each alert makes
// before it is sent, so an incident seen by two replicas alerts once
// (router-ext/store/alert-claims.ts). Versions 301, 303, ...
import type { Migration } from "./migration.ts";

export const REPLICA_MIGRATIONS: readonly Migration[] = [
  {
    version: 301,
    name: "alert claims",
    // One row per alert sent: source, state, time and dedup key (ids only).
    sql: `
CREATE TABLE alert_claims (
  key TEXT PRIMARY KEY,
  replica TEXT NOT NULL,
  claimed_at INTEGER NOT NULL
) STRICT;
CREATE INDEX alert_claims_at ON alert_claims(claimed_at);
`,
  },
];
