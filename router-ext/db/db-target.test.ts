import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, test } from "vitest";
import { checkDbTarget, DbTargetError, STALLGUARD_APPLICATION_ID } from "./db-target.ts";
import { migrate } from "./migrations.ts";
import { openDatabase } from "./open.ts";
import { readSqliteSummary } from "./sqlite-schema.ts";

const dirs: string[] = [];
function tmp(): string {
  const d = mkdtempSync(join(tmpdir(), "sg-dbtarget-"));
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** An opencode-like database in WAL mode, closed (no -wal or -shm left), mode 0644. */
function opencodeDb(dir: string): string {
  const path = join(dir, "opencode.db");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.exec("CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, title TEXT)");
  db.exec("CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, data TEXT)");
  db.exec("CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT, data TEXT)");
  db.prepare("INSERT INTO session VALUES (?, ?, ?)").run("ses_1", null, "a title");
  db.close();
  chmodSync(path, 0o644);
  return path;
}

/** Bytes, mode and the companion files: what "left as it was" means. */
function snapshot(path: string) {
  const st = statSync(path);
  return {
    mode: st.mode & 0o7777,
    bytes: st.isFile() ? readFileSync(path).toString("base64") : null,
    wal: existsSync(`${path}-wal`),
    shm: existsSync(`${path}-shm`),
  };
}

describe("checkDbTarget: what stallguard's own database path may name", () => {
  test("a new path, an empty file and :memory: are fine", () => {
    const d = tmp();
    expect(checkDbTarget(join(d, "new.db"))).toBe("new");
    writeFileSync(join(d, "empty.db"), "");
    expect(checkDbTarget(join(d, "empty.db"))).toBe("new");
    expect(checkDbTarget(":memory:")).toBe("memory");
  });

  test("stallguard's own database: marked on open, and one from before the marker by its tables", () => {
    const d = tmp();
    const own = join(d, "stallguard.db");
    openDatabase(own).close();
    expect(readSqliteSummary(own)).toMatchObject({ applicationId: STALLGUARD_APPLICATION_ID });
    expect(checkDbTarget(own)).toBe("stallguard");
    const legacy = join(d, "legacy.db");
    const db = new Database(legacy);
    migrate(db);
    db.close();
    expect(readSqliteSummary(legacy)).toMatchObject({ applicationId: 0 });
    expect(checkDbTarget(legacy)).toBe("stallguard");
  });

  test("opencode.db is refused naming its tables, and neither check nor open touches it", () => {
    const path = opencodeDb(tmp());
    const before = snapshot(path);
    expect(() => checkDbTarget(path)).toThrow(DbTargetError);
    expect(() => checkDbTarget(path)).toThrow(
      `${path} is a SQLite database that is not stallguard's (it holds 3 other table(s): session, message, part); it was left as it was`,
    );
    expect(() => openDatabase(path)).toThrow(/not stallguard's/);
    expect(snapshot(path)).toEqual(before);
    expect(before).toMatchObject({ mode: 0o644, wal: false, shm: false });
  });

  test("a folder, a URL and a file that is not SQLite are refused; nothing is created or chmodded", () => {
    const d = tmp();
    const folder = join(d, "state");
    mkdirSync(folder, { mode: 0o755 });
    chmodSync(folder, 0o755);
    expect(() => openDatabase(folder)).toThrow(
      `${folder} is a folder; give a file path, e.g. ${join(folder, "stallguard.db")}`,
    );
    expect(snapshot(folder).mode).toBe(0o755);
    expect(() => openDatabase("postgres://user@db.example/stallguard")).toThrow(
      "postgres://user@db.example/stallguard is a PostgreSQL store: only `stallguard serve` uses one; this command reads a SQLite file",
    );
    expect(() => openDatabase("mysql://user@db.example/stallguard")).toThrow(
      "mysql://user@db.example/stallguard is a database URL stallguard does not use: its store is a SQLite file path or postgres://user@host:port/database",
    );
    expect(existsSync("mysql:")).toBe(false);
    expect(existsSync("postgres:")).toBe(false);
    const text = join(d, "notes.txt");
    writeFileSync(text, "not a database\n".repeat(20));
    chmodSync(text, 0o644);
    const before = snapshot(text);
    expect(() => openDatabase(text)).toThrow(`${text} is not a SQLite database; it was left as it was`);
    expect(snapshot(text)).toEqual(before);
  });

  test("a schema over many pages (interior b-tree pages) is read in full, the same as SQLite says", () => {
    const path = join(tmp(), "many.db");
    const db = new Database(path);
    db.pragma("page_size = 512");
    const cols = Array.from({ length: 30 }, (_, i) => `column_with_a_long_name_${i} TEXT`).join(", ");
    for (let i = 0; i < 100; i++) db.exec(`CREATE TABLE t_${i} (${cols})`);
    const want = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>
    )
      .map((r) => r.name)
      .sort();
    db.close();
    const got = readSqliteSummary(path);
    expect(got === null || got === "not sqlite" ? [] : [...got.tables].sort()).toEqual(want);
    expect(() => checkDbTarget(path)).toThrow(
      /holds 100 other table\(s\): t_0, t_1, t_2, t_3, t_4, t_5, \.\.\./,
    );
  });

  test("a schema still only in the -wal file (open, never checkpointed) is read from there", () => {
    const d = tmp();
    const foreignPath = join(d, "fresh-foreign.db");
    const foreign = new Database(foreignPath);
    foreign.pragma("journal_mode = WAL");
    foreign.pragma("wal_autocheckpoint = 0");
    foreign.exec("CREATE TABLE session (id TEXT)");
    const ownPath = join(d, "fresh-own.db");
    const own = new Database(ownPath);
    own.pragma("journal_mode = WAL");
    own.pragma("wal_autocheckpoint = 0");
    migrate(own);
    try {
      expect(() => checkDbTarget(foreignPath)).toThrow(/not stallguard's \(.*session/);
      expect(checkDbTarget(ownPath)).toBe("stallguard");
    } finally {
      foreign.close();
      own.close();
    }
  });
});
