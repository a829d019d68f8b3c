// What `stallguard doctor` gathers about a PostgreSQL store (pg-gather.ts) for
// the pure checks of pg-checks.ts: where the password comes from (never the
// password), whether a connection works, the schema version, and the serve
// runs the database records (router_runs: one row per serve process).
export interface PgRunFact {
  seq: number;
  pid: number;
  version: string;
  startedAt: number;
  aliveAt: number;
  stoppedAt: number | null;
}

export type PgPasswordSource =
  | { kind: "env" }
  | { kind: "file"; path: string }
  | { kind: "none" }
  | { kind: "bad"; problem: string };

export interface PgStoreFact {
  /** postgres://user@host:port/database (a valid target never holds a password). */
  target: string;
  /** host:port, for the failure line; null when the URL is not valid. */
  address: string | null;
  password: PgPasswordSource;
  connection: { ok: true } | { ok: false; code: string | null; problem: string };
  /**
   * The database's highest migration, the newest this build knows, and this
   * build's migrations the database has not recorded; null without a connection.
   */
  schema: { version: number; newest: number; pending: number[] } | null;
  /** The serve runs not stopped cleanly, and the latest one; null without a connection or table. */
  runs: PgRunFact[] | null;
  /** How often a serving replica moves its alive mark (router-alive.ts). */
  aliveMs: number;
}
