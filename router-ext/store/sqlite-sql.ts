// The SQLite engine of the Sql interface, over one better-sqlite3 handle.
// better-sqlite3 is synchronous but a transaction's body is async: while one
// is open (BEGIN IMMEDIATE ... COMMIT), a statement issued outside it would
// run inside it on the same handle and be committed or rolled back with it.
// So a small FIFO lock: outside statements and other transactions wait for
// the open one; with nothing open a statement runs at once. Prepared
// statements are cached by their SQL text.
import type Database from "better-sqlite3";
import type { Sql, SqlParams, SqlRun } from "./sql.ts";

type Statement = Database.Statement<unknown[], unknown>;

/** Distinct statements kept prepared; past it the cache starts over (statements are static text). */
const CACHE_MAX = 1000;

export class SqliteSql implements Sql {
  readonly engine = "sqlite" as const;
  private readonly cache = new Map<string, Statement>();
  /** Transactions running or statements waiting for one to end. */
  private held = 0;
  private tail: Promise<unknown> = Promise.resolve();

  constructor(readonly db: Database.Database) {}

  all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.outside(() => this.allNow<T>(sql, params));
  }

  get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    return this.outside(() => this.getNow<T>(sql, params));
  }

  run(sql: string, params?: SqlParams): Promise<SqlRun> {
    return this.outside(() => this.runNow(sql, params));
  }

  tx<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    return this.serial(() => this.transaction(fn));
  }

  allNow<T>(sql: string, params?: SqlParams): T[] {
    const s = this.prepare(sql);
    return (params === undefined ? s.all() : Array.isArray(params) ? s.all(...params) : s.all(params)) as T[];
  }

  getNow<T>(sql: string, params?: SqlParams): T | undefined {
    const s = this.prepare(sql);
    return (params === undefined ? s.get() : Array.isArray(params) ? s.get(...params) : s.get(params)) as
      | T
      | undefined;
  }

  runNow(sql: string, params?: SqlParams): SqlRun {
    const s = this.prepare(sql);
    const r = params === undefined ? s.run() : Array.isArray(params) ? s.run(...params) : s.run(params);
    return { changes: r.changes };
  }

  private prepare(sql: string): Statement {
    let s = this.cache.get(sql);
    if (s) return s;
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    s = this.db.prepare(sql);
    this.cache.set(sql, s);
    return s;
  }

  /**
   * Runs `work` (synchronous, on the handle) outside any transaction: now when
   * nothing is open, else after what waits. For SQLite-only probes (PRAGMA).
   */
  outside<T>(work: () => T): Promise<T> {
    if (this.held > 0) return this.serial(async () => work());
    try {
      return Promise.resolve(work());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** Runs `work` once everything before it is done; whatever comes later waits for it. */
  private serial<T>(work: () => Promise<T>): Promise<T> {
    this.held++;
    const out = this.tail.then(work);
    const release = () => {
      this.held--;
    };
    this.tail = out.then(release, release);
    return out;
  }

  private async transaction<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    const q = new SqliteTx(this);
    this.prepare("BEGIN IMMEDIATE").run();
    try {
      const out = await fn(q);
      this.prepare("COMMIT").run();
      return out;
    } catch (err) {
      if (this.db.inTransaction) this.prepare("ROLLBACK").run();
      throw err;
    } finally {
      q.end();
    }
  }
}

/** The statements of one open transaction: run at once; a nested tx joins it. */
class SqliteTx implements Sql {
  readonly engine = "sqlite" as const;
  private open = true;

  constructor(private readonly sql: SqliteSql) {}

  end(): void {
    this.open = false;
  }

  all<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.now(() => this.sql.allNow<T>(sql, params));
  }

  get<T>(sql: string, params?: SqlParams): Promise<T | undefined> {
    return this.now(() => this.sql.getNow<T>(sql, params));
  }

  run(sql: string, params?: SqlParams): Promise<SqlRun> {
    return this.now(() => this.sql.runNow(sql, params));
  }

  tx<T>(fn: (q: Sql) => Promise<T>): Promise<T> {
    return this.now(() => fn(this)).then((p) => p);
  }

  private now<T>(work: () => T): Promise<T> {
    if (!this.open) return Promise.reject(new Error("statement on a transaction that has ended"));
    try {
      return Promise.resolve(work());
    } catch (err) {
      return Promise.reject(err);
    }
  }
}
