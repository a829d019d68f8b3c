// Schema for the gate's credentials and stream outcomes (issue 13). Versions
// 101, 103, 105, ... (another line of work uses 151, 153, ...).
import type { Migration } from "./migration.ts";

export const SECURITY_MIGRATIONS: readonly Migration[] = [
  {
    version: 101,
    name: "request client and outcome",
    sql: `
ALTER TABLE requests ADD COLUMN client TEXT;
ALTER TABLE requests ADD COLUMN error TEXT;
ALTER TABLE requests ADD COLUMN response_bytes INTEGER;
CREATE INDEX requests_client ON requests(client, started_at);
`,
  },
];
