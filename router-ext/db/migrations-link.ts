// Schema for the link between the plugin, the gate and the router (issue 25):
// headers seen apart from reports, the plugin processes the gate heard from
// (where they report, whether that works), and the router's own runs, so an
// outage is recorded when it comes back. Versions 251, 253, ... (others use
// 101.., 151.., 201).
import type { Migration } from "./migration.ts";

export const LINK_MIGRATIONS: readonly Migration[] = [
  {
    version: 251,
    name: "plugin headers apart from reports",
    // plugin_seen_at now means a report (a transition or heartbeat) arrived;
    // plugin_headers_at that the gate saw the plugin's headers. One row per
    // plugin process heard through the gate: its report URL and state.
    sql: `
ALTER TABLE sessions ADD COLUMN plugin_headers_at INTEGER;
CREATE TABLE plugin_links (
  instance_id TEXT PRIMARY KEY,
  plugin_version TEXT NOT NULL,
  report_url TEXT,
  report_state TEXT,
  first_at INTEGER NOT NULL,
  last_at INTEGER NOT NULL
) STRICT;
CREATE INDEX plugin_links_last ON plugin_links(last_at);
`,
  },
  {
    version: 253,
    name: "router runs and outages",
    // One row per serve run (alive_at moves while it runs; stopped_at on a clean
    // stop), and the router's own events: an outage found on start.
    sql: `
CREATE TABLE router_runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  started_at INTEGER NOT NULL,
  alive_at INTEGER NOT NULL,
  stopped_at INTEGER,
  pid INTEGER NOT NULL,
  version TEXT NOT NULL
) STRICT;
CREATE TABLE router_events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL CHECK (kind IN ('down')),
  from_at INTEGER NOT NULL,
  to_at INTEGER NOT NULL,
  clean INTEGER NOT NULL,
  at INTEGER NOT NULL
) STRICT;
CREATE INDEX router_events_at ON router_events(at);
`,
  },
];
