// The Sql interface (sql.ts) over a node-postgres pool. `pg` is imported
// lazily (loadPg) so a SQLite user never loads it. BIGINT and NUMERIC come
// back as JS numbers (ms timestamps exceed 2^31, SUM and COUNT are NUMERIC
// and BIGINT), set on this pool's own type table, never pg's global one.
import type { ClientConfig, Pool, PoolClient, QueryResult, QueryResultRow } from "pg";
import { toPgStatement } from "./pg-placeholders.ts";
import type { PgTarget } from "./pg-target.ts";
import type { Sql, SqlParams, SqlRun } from "./sql.ts";

export type PgModule = typeof import("pg");

/** node-postgres, loaded on first use (never at start-up on SQLite). */
export async function loadPg(): Promise<PgModule> {
  const mod = (await import("pg")) as PgModule & { default?: PgModule };
  return mod.default ?? mod;
}

const INT8_OID = 20;
const NUMERIC_OID = 1700;

/** A type table that parses BIGINT and NUMERIC to numbers; pg's global table is left alone. */
export function numberTypes(pg: PgModule): InstanceType<PgModule["TypeOverrides"]> {
  const types = new pg.TypeOverrides();
  types.setTypeParser(INT8_OID, "text", (v: string) => Number(v));
  types.setTypeParser(NUMERIC_OID, "text", (v: string) => Number(v));
  return types;
}

interface Queryable {
  query<R extends QueryResultRow>(text: string, values?: unknown[]): Promise<QueryResult<R>>;
}

/** node-postgres's words for a connection that broke or never came, which carry no code. */
const CONNECTION_LOST =
  /Connection terminated|timeout exceeded when trying to connect|connection error|not queryable|Connection ended/i;

/**
 * A lost connection as SQLSTATE 08006 (connection_failure), so the store's
 * write queue and /progress treat it like any database that cannot take a
 * write now (retry later) instead of a bug.
 */
export function withConnectionCode(err: unknown): unknown {
  const e = err as Error & { code?: unknown };
  if (e instanceof Error && e.code === undefined && CONNECTION_LOST.test(e.message)) e.code = "08006";
  return err;
}

/** Runs one statement; a statement without parameters goes as is (DDL may hold several). */
async function exec<R extends QueryResultRow>(
  on: Queryable,
  sql: string,
  params?: SqlParams,
): Promise<QueryResult<R>> {
  try {
    if (params === undefined) return await on.query<R>(sql);
    const st = toPgStatement(sql, params);
    return await on.query<R>(st.text, st.values);
  } catch (err) {
    throw withConnectionCode(err);
  }
}

/** The Sql of one checked-out client inside an open transaction; a nested tx joins it. */
function clientSql(client: PoolClient): Sql {
  const q: Sql = {
    engine: "postgres",
    all: async <T>(sql: string, params?: SqlParams) => (await exec(client, sql, params)).rows as T[],
    get: async <T>(sql: string, params?: SqlParams) =>
      (await exec(client, sql, params)).rows[0] as T | undefined,
    run: async (sql: string, params?: SqlParams): Promise<SqlRun> => ({
      changes: (await exec(client, sql, params)).rowCount ?? 0,
    }),
    tx: (fn) => fn(q),
  };
  return q;
}

/** Runs fn in BEGIN ... COMMIT on one client; ROLLBACK when it throws, and a client that cannot roll back is discarded. */
async function inTransaction<T>(pool: Pool, fn: (q: Sql) => Promise<T>): Promise<T> {
  const client = await pool.connect().catch((err: unknown) => {
    throw withConnectionCode(err);
  });
  let broken: Error | undefined;
  // A checked-out client's connection error (the server went away mid-transaction)
  // is ours to catch, else it is an uncaught 'error' event; the statement fails too.
  const onError = (err: Error) => {
    broken = err;
  };
  client.on("error", onError);
  try {
    await exec(client, "BEGIN");
    try {
      const out = await fn(clientSql(client));
      await exec(client, "COMMIT");
      return out;
    } catch (err) {
      await client.query("ROLLBACK").catch((e: Error) => {
        broken = e;
      });
      throw err;
    }
  } finally {
    client.removeListener("error", onError);
    client.release(broken);
  }
}

export interface PgSql extends Sql {
  readonly engine: "postgres";
  readonly pool: Pool;
  /** Ends every connection of the pool. */
  close(): Promise<void>;
}

/** The Sql over a pool the caller made (with numberTypes as its `types`). */
export function pgSqlOf(pool: Pool): PgSql {
  return {
    engine: "postgres",
    pool,
    all: async <T>(sql: string, params?: SqlParams) => (await exec(pool, sql, params)).rows as T[],
    get: async <T>(sql: string, params?: SqlParams) =>
      (await exec(pool, sql, params)).rows[0] as T | undefined,
    run: async (sql, params) => ({ changes: (await exec(pool, sql, params)).rowCount ?? 0 }),
    tx: (fn) => inTransaction(pool, fn),
    close: () => pool.end(),
  };
}

export interface PgSqlOptions {
  target: PgTarget;
  password?: string;
  /** Connections in the pool (10). */
  max?: number;
  /** A pool error on an idle client (the server went away): reported, never thrown; the next query reconnects. */
  onError?: (err: Error) => void;
}

/** Opens a pool on the target with this engine's number parsing; connects on the first query. */
export async function openPgSql(o: PgSqlOptions): Promise<PgSql> {
  const pg = await loadPg();
  const pool = new pg.Pool({
    ...pgConnection(o.target, o.password),
    max: o.max ?? 10,
    types: numberTypes(pg),
  });
  pool.on("error", o.onError ?? (() => {}));
  return pgSqlOf(pool);
}

/** The connection settings of a target, for a pool or a single client (pg-notify.ts). */
export function pgConnection(target: PgTarget, password?: string): ClientConfig {
  return {
    host: target.host,
    port: target.port,
    user: target.user,
    database: target.database,
    connectionTimeoutMillis: 5000,
    ...(password === undefined ? {} : { password }),
  };
}
