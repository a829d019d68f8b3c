// The same migrations as SQLite (router-ext/db/migrations.ts) applied to a
// PostgreSQL database, translated by pg-dialect.ts. Replicas that start
// together race here: everything runs in ONE transaction that first takes
// pg_advisory_xact_lock(MIGRATE_LOCK), so the first replica applies what is
// missing and commits, and the others, let in one after another, find every
// version recorded and apply nothing. PostgreSQL's DDL is transactional, so a
// failing migration leaves the database as it was (SQLite commits each one).
// SQLite's PRAGMA application_id is the row ('application_id', 'SGRD') in
// stallguard_meta: a database with other tables and without it is refused.
import { STALLGUARD_APPLICATION_ID } from "../db/db-target.ts";
import { MIGRATIONS, type Migration } from "../db/migrations.ts";
import { toPostgresDdl } from "./pg-dialect.ts";
import type { Sql } from "./sql.ts";

/** The advisory lock key migrations run under ("SGRD", the application id). */
export const MIGRATE_LOCK = STALLGUARD_APPLICATION_ID;

/** PostgreSQL's stand-in for PRAGMA application_id; not in SQLite's schema. */
export const META_TABLE = "stallguard_meta";

const APP_ID = String(STALLGUARD_APPLICATION_ID);

/** Refuses a database that holds other programs' tables; nothing is created before this passes. */
async function checkOwn(q: Sql): Promise<void> {
  const tables = (
    await q.all<{ name: string }>(
      "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1",
    )
  ).map((t) => t.name);
  if (tables.length === 0) return;
  if (tables.includes(META_TABLE)) {
    const row = await q.get<{ value: string }>(
      `SELECT value FROM ${META_TABLE} WHERE key = 'application_id'`,
    );
    if (row?.value === APP_ID) return;
  }
  const names = tables.slice(0, 6).join(", ") + (tables.length > 6 ? ", ..." : "");
  throw new Error(
    `the PostgreSQL database is not stallguard's (it holds ${tables.length} other table(s): ${names}); give stallguard a database of its own; it was left as it was`,
  );
}

async function recorded(q: Sql, known: number): Promise<Set<number>> {
  const rows = await q.all<{ version: number }>("SELECT version FROM schema_migrations");
  const current = Math.max(0, ...rows.map((r) => r.version));
  if (current > known)
    throw new Error(
      `database schema version ${current} is newer than this stallguard (knows ${known}): upgrade stallguard`,
    );
  return new Set(rows.map((r) => r.version));
}

/**
 * Applies every migration the database has not recorded, in version order,
 * under the migration lock. Returns the versions this call applied (none
 * when another replica got there first).
 */
export async function migratePg(
  sql: Sql,
  migrations: readonly Migration[] = MIGRATIONS,
  now: () => number = Date.now,
): Promise<number[]> {
  if (sql.engine !== "postgres") throw new Error("migratePg runs on the PostgreSQL engine only");
  return sql.tx(async (q) => {
    await q.get(`SELECT pg_advisory_xact_lock(${MIGRATE_LOCK})`);
    await checkOwn(q);
    await q.run(
      `CREATE TABLE IF NOT EXISTS ${META_TABLE} (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL);`,
    );
    await q.run(
      `INSERT INTO ${META_TABLE} (key, value) VALUES ('application_id', ?) ON CONFLICT (key) DO NOTHING`,
      [APP_ID],
    );
    const done = await recorded(q, Math.max(0, ...migrations.map((m) => m.version)));
    const applied: number[] = [];
    for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
      if (done.has(m.version)) continue;
      await q.run(toPostgresDdl(m.sql));
      await q.run("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)", [
        m.version,
        m.name,
        now(),
      ]);
      applied.push(m.version);
    }
    return applied;
  });
}

/** The schema version a PostgreSQL database is at (0 before the first migration). */
export async function pgSchemaVersion(sql: Sql): Promise<number> {
  return Math.max(0, ...(await pgAppliedVersions(sql)));
}

/** Every migration version a PostgreSQL database recorded (none before the first). */
export async function pgAppliedVersions(sql: Sql): Promise<number[]> {
  const exists = await sql.get<{ t: string | null }>("SELECT to_regclass('schema_migrations')::text AS t");
  if (!exists?.t) return [];
  const rows = await sql.all<{ version: number }>("SELECT version FROM schema_migrations ORDER BY version");
  return rows.map((r) => Number(r.version));
}
