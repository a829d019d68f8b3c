import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, test } from "vitest";
import type { Migration } from "./migration.ts";
import { MIGRATIONS, migrate, schemaVersion } from "./migrations.ts";

const dirs: string[] = [];
function fileDb(): Database.Database {
  const dir = mkdtempSync(join(tmpdir(), "sg-migrate-"));
  dirs.push(dir);
  return new Database(join(dir, "t.db"));
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const m = (version: number): Migration => ({
  version,
  name: `m${version}`,
  sql: `CREATE TABLE t${version} (x INTEGER) STRICT;`,
});

describe("migrate", () => {
  test("applies the shipped migrations once, in order, on a real file", () => {
    const db = fileDb();
    const first = migrate(db);
    expect(first).toEqual([...MIGRATIONS].map((x) => x.version).sort((a, b) => a - b));
    expect(migrate(db)).toEqual([]);
    expect(schemaVersion(db)).toBe(Math.max(...MIGRATIONS.map((x) => x.version)));
    db.close();
  });

  test("a lower version added later (interleaved feature migrations) is still applied", () => {
    const db = fileDb();
    expect(migrate(db, [m(1), m(3)])).toEqual([1, 3]);
    expect(migrate(db, [m(1), m(2), m(3)])).toEqual([2]);
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 't%'").all();
    expect(tables.map((t) => (t as { name: string }).name).sort()).toEqual(["t1", "t2", "t3"]);
    db.close();
  });

  test("a database migrated before the compactions index (203) gets it on the next start", () => {
    const db = fileDb();
    migrate(
      db,
      MIGRATIONS.filter((x) => x.version !== 203),
    );
    expect(migrate(db)).toEqual([203]);
    const index = db.prepare("SELECT sql FROM sqlite_master WHERE name = 'requests_compactions'").get();
    expect(index).toEqual({
      sql: "CREATE INDEX requests_compactions ON requests(session_id, started_at) WHERE agent = 'compaction'",
    });
    db.close();
  });

  test("a database from before the session id rename keeps its gate rows under session_id", () => {
    const db = fileDb();
    migrate(
      db,
      MIGRATIONS.filter((x) => x.version < 201),
    );
    db.prepare(
      "INSERT INTO requests (conversation, status, started_at, duration_ms, refused) VALUES ('ses_old', 200, 1, 2, 0)",
    ).run();
    db.prepare(
      "INSERT INTO refused_conversations (conversation, scope, refusal_at, first_at, last_at, requests) VALUES ('ses_old', 'session', 1, 1, 1, 3)",
    ).run();
    expect(migrate(db)).toEqual(MIGRATIONS.map((x) => x.version).filter((v) => v >= 201));
    expect(db.prepare("SELECT session_id, status FROM requests").all()).toEqual([
      { session_id: "ses_old", status: 200 },
    ]);
    expect(db.prepare("SELECT session_id, requests FROM refused_sessions").all()).toEqual([
      { session_id: "ses_old", requests: 3 },
    ]);
    const plan = db
      .prepare("EXPLAIN QUERY PLAN SELECT 1 FROM requests WHERE session_id = 'x' ORDER BY started_at")
      .all();
    expect(JSON.stringify(plan)).toContain("requests_session");
    db.close();
  });

  test("a database newer than this build is refused, untouched", () => {
    const db = fileDb();
    migrate(db, [m(1), m(2)]);
    expect(() => migrate(db, [m(1)])).toThrow(/newer than this stallguard/);
    db.close();
  });

  test("a failing migration rolls back and records nothing", () => {
    const db = fileDb();
    migrate(db, [m(1)]);
    expect(() =>
      migrate(db, [m(1), { version: 2, name: "bad", sql: "CREATE TABLE t9 (x); NOT SQL" }]),
    ).toThrow();
    expect(schemaVersion(db)).toBe(1);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE name = 't9'").all()).toEqual([]);
    db.close();
  });

  test("a database from before the plugin-link migration keeps its sessions; plugin_seen_at still means a report", () => {
    const db = fileDb();
    migrate(
      db,
      MIGRATIONS.filter((x) => x.version < 251),
    );
    db.prepare(
      "INSERT INTO sessions (session_id, root_id, source, plugin_version, plugin_seen_at, first_seen_at, last_seen_at) VALUES ('ses_old', 'ses_old', 'plugin', '0.1.0', 5, 1, 5)",
    ).run();
    expect(migrate(db)).toEqual(MIGRATIONS.map((x) => x.version).filter((v) => v >= 251));
    expect(db.prepare("SELECT plugin_seen_at, plugin_headers_at FROM sessions").all()).toEqual([
      { plugin_seen_at: 5, plugin_headers_at: null },
    ]);
    db.close();
  });
});
