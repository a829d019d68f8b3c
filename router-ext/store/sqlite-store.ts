// The store on one SQLite file: the file opened and migrated by
// router-ext/db/open.ts (PRAGMAs, 0600 mode, the migrations), statements
// through the SQLite engine of Sql, and the SQLite-only probe of whether the
// file takes writes (router-ext/db/writable.ts) run under the engine's lock.
import type Database from "better-sqlite3";
import { checkDbTarget } from "../db/db-target.ts";
import { type OpenDatabaseOptions, openDatabase } from "../db/open.ts";
import { databaseWritable } from "../db/writable.ts";
import { WriterThread } from "../db/writer-thread.ts";
import { SqlStore, type SqlStoreOptions } from "./sql-store.ts";
import { SqliteSql } from "./sqlite-sql.ts";

export class SqliteStore extends SqlStore {
  /** The handle, for what only SQLite has (tests reading rows, SQLite-only probes). */
  readonly db: Database.Database;

  constructor(db: Database.Database, opts: Omit<SqlStoreOptions, "writable" | "close"> = {}) {
    const sql = new SqliteSql(db);
    super(sql, {
      ...opts,
      writable: () => sql.outside(() => databaseWritable(db)),
      close: () => {
        if (db.open) db.close();
      },
    });
    this.db = db;
  }
}

export interface SqliteWriterOptions {
  /**
   * The gate's batches written, and the admin page's and the API's reads run,
   * by a thread with its own connection to the file, so a commit or a heavy
   * read never holds the event loop (serve); not for ":memory:".
   */
  writerThread?: boolean;
}

/**
 * Opens (creating when missing) and migrates the SQLite file at `path`
 * (":memory:" for tests), or takes an opened handle, and reads the gate's facts.
 *
 * @example
 * const store = await openSqliteStore(defaultDbPath());
 */
export async function openSqliteStore(
  path: string | Database.Database,
  opts: Omit<SqlStoreOptions, "writable" | "close" | "offload" | "reads"> &
    OpenDatabaseOptions &
    SqliteWriterOptions = {},
): Promise<SqliteStore> {
  const db = typeof path === "string" ? openDatabase(path, opts) : path;
  const offload =
    opts.writerThread && typeof path === "string" && checkDbTarget(path) !== "memory"
      ? await WriterThread.start(path, opts.busyTimeoutMs ?? 5000, opts.log ?? (() => {}))
      : null;
  const store = new SqliteStore(db, offload ? { ...opts, offload, reads: offload } : opts);
  try {
    await store.reloadFacts();
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
