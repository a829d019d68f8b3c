// Schema for what the watchdog reads (issue 25): each tick records what it
// made of opencode's database. Versions 181, 183, ... (other lines of work
// use 101, 103, ... and 151, 153, ...).
import type { Migration } from "./migration.ts";

export const WATCHDOG_MIGRATIONS: readonly Migration[] = [
  {
    version: 181,
    name: "watchdog tick: opencode database state",
    sql: `
ALTER TABLE watchdog_ticks ADD COLUMN db TEXT;
`,
  },
];
