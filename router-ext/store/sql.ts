// One SQL connection (or pool) as the repositories see it, whatever the engine.
// Statements are written once, in SQL both SQLite (3.40+) and PostgreSQL (15)
// accept: `?` positional or `@name` named placeholders (the PostgreSQL engine
// rewrites them to $n), ON CONFLICT ... DO UPDATE/NOTHING (never INSERT OR ...),
// excluded.col, COALESCE, no json1 or PRAGMA in a repository.
export type SqlValue = string | number | null;
export type SqlParams = readonly SqlValue[] | Readonly<Record<string, SqlValue>>;

export interface SqlRun {
  /** Rows the statement changed. */
  changes: number;
}

export interface Sql {
  readonly engine: "sqlite" | "postgres";
  all<T>(sql: string, params?: SqlParams): Promise<T[]>;
  get<T>(sql: string, params?: SqlParams): Promise<T | undefined>;
  run(sql: string, params?: SqlParams): Promise<SqlRun>;
  /**
   * Runs fn in one transaction on one connection and commits when it resolves
   * (rolls back when it throws). Statements through `q` belong to it; a nested
   * tx call on `q` joins the outer transaction.
   */
  tx<T>(fn: (q: Sql) => Promise<T>): Promise<T>;
}
