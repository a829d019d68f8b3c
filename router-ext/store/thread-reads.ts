// The Sql the admin page's and the API's reads go through on SQLite under
// serve: each statement runs on the writer thread's connection
// (router-ext/db/writer-worker.ts), so a heavy read (the session list with
// each session's spend, a week of requests per client key) never holds the
// event loop every /v1 request is served on; the main thread only receives
// the rows. With no thread (it never started, or died) a read runs here as
// before. Writes never come this way: they go to the main connection.
import type { Sql, SqlParams, SqlRun } from "./sql.ts";

/** Runs one read statement elsewhere; null when it can no longer (the caller reads itself). */
export interface ReadOffload {
  read(sql: string, params: SqlParams | undefined, one: boolean): Promise<unknown[] | null>;
}

export class ThreadReads implements Sql {
  readonly engine = "sqlite" as const;

  constructor(
    private readonly thread: ReadOffload,
    private readonly main: Sql,
  ) {}

  async all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    const rows = await this.thread.read(sql, params, false);
    return rows === null ? this.main.all<T>(sql, params) : (rows as T[]);
  }

  async get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    const rows = await this.thread.read(sql, params, true);
    return rows === null ? this.main.get<T>(sql, params) : (rows[0] as T | undefined);
  }

  run(sql: string, params?: SqlParams): Promise<SqlRun> {
    return this.main.run(sql, params);
  }

  tx<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    return this.main.tx(fn);
  }
}
