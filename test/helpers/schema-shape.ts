// A schema as comparable values, from SQLite and from PostgreSQL: per table,
// its columns in order with the PostgreSQL type each SQLite type becomes
// (router-ext/store/pg-dialect.ts) and whether it may be NULL; per table, its
// index names. A primary key column counts as NOT NULL on both (SQLite lets a
// TEXT key be NULL, a quirk no stallguard row relies on).
import type Database from "better-sqlite3";
import type { Sql } from "../../router-ext/store/sql.ts";

export type Shape = Record<string, string[]>;

const PG_TYPE_OF: Record<string, string> = { INTEGER: "bigint", TEXT: "text", REAL: "double precision" };

function sortedShape(rows: Array<{ table: string; entry: string }>): Shape {
  const out: Shape = {};
  for (const r of rows) out[r.table] = [...(out[r.table] ?? []), r.entry];
  return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
}

function liteTables(db: Database.Database): string[] {
  return (
    db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .all() as Array<{ name: string }>
  ).map((t) => t.name);
}

export function sqliteColumns(db: Database.Database): Shape {
  const rows = liteTables(db).flatMap((table) =>
    (
      db
        .prepare(`SELECT name, type, "notnull" AS nn, pk FROM pragma_table_info(?) ORDER BY cid`)
        .all(table) as Array<{
        name: string;
        type: string;
        nn: number;
        pk: number;
      }>
    ).map((c) => ({
      table,
      entry: `${c.name} ${PG_TYPE_OF[c.type] ?? c.type}${c.nn || c.pk ? " not null" : ""}`,
    })),
  );
  return sortedShape(rows);
}

export async function pgColumns(sql: Sql, except: readonly string[]): Promise<Shape> {
  const rows = await sql.all<{ table: string; name: string; type: string; nullable: string }>(
    `SELECT table_name AS "table", column_name AS name, data_type AS type, is_nullable AS nullable
     FROM information_schema.columns WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`,
  );
  return sortedShape(
    rows
      .filter((r) => !except.includes(r.table))
      .map((r) => ({
        table: r.table,
        entry: `${r.name} ${r.type}${r.nullable === "NO" ? " not null" : ""}`,
      })),
  );
}

export function sqliteIndexes(db: Database.Database): Shape {
  const rows = db
    .prepare(
      "SELECT tbl_name AS \"table\", name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex%' ORDER BY name",
    )
    .all() as Array<{ table: string; name: string }>;
  return sortedShape(rows.map((r) => ({ table: r.table, entry: r.name })));
}

export async function pgIndexes(sql: Sql): Promise<Shape> {
  const rows = await sql.all<{ table: string; name: string }>(
    `SELECT tablename AS "table", indexname AS name FROM pg_indexes
     WHERE schemaname = current_schema() AND indexname NOT LIKE '%_pkey' ORDER BY indexname`,
  );
  return sortedShape(rows.map((r) => ({ table: r.table, entry: r.name })));
}
