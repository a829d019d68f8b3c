// The watchdog's database source on real SQLite files shaped as opencode
// writes them: incremental reads (only what was updated since the last tick,
// with its whole tree), bounds per tick, malformed rows, and the states a
// tick reports when the file is missing, unreadable or of another shape.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, test } from "vitest";
import { type ExportDoc, syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { type DbReadOptions, readDbSource } from "./db-source.ts";

const tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-db-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const T = 1_800_000_000_000;

/** A looping session of `calls` reads, updated at `updated`, optionally under a parent. */
function session(index: number, updated: number, parentID?: string): ExportDoc {
  const doc = syntheticSession(index, 12, { loopEvery: 1 });
  return { ...doc, info: { ...doc.info, ...(parentID ? { parentID } : {}), time: { created: T, updated } } };
}
const idOf = (index: number) => syntheticSession(index, 1).info.id;

function fixture(docs: ExportDoc[]): string {
  const path = join(tmp, `oc${++n}.db`);
  writeOpencodeDb(path, docs);
  return path;
}

const opts = (path: string, over: Partial<DbReadOptions> = {}): DbReadOptions => ({
  path,
  since: T + 50_000,
  maxSessions: 500,
  maxTree: 200,
  maxDepth: 16,
  maxRows: 200_000,
  busyTimeoutMs: 1000,
  ...over,
});

const treeIds = (trees: Array<Array<{ session: { id: string } }>>) =>
  trees.map((t) => t.map((m) => m.session.id));

describe("readDbSource", () => {
  test("only sessions updated since the last tick; a child walks up to its root and brings its tree", async () => {
    const path = fixture([
      session(0, T + 1000), // an orchestrator idle since long before
      session(1, T + 60_000, idOf(0)), // its worker, active now
      session(2, T + 2000), // an old session nobody touches
      session(3, T + 70_000), // another active root
    ]);
    const seen = await readDbSource(opts(path));
    expect(seen).toMatchObject({ state: "read", active: 2, malformed: 0, truncated: false });
    expect(treeIds(seen.trees)).toEqual([[idOf(3)], [idOf(0), idOf(1)]]);
    const worker = seen.trees[1]?.[1];
    expect(worker?.session).toMatchObject({ parentID: idOf(0), time: { updated: T + 60_000 } });
    expect(worker?.messages).toHaveLength(13);
  });

  test("the next tick reads what changed since, while another connection writes", async () => {
    const path = fixture([session(0, T + 1000), session(1, T + 2000)]);
    const first = await readDbSource(opts(path, { since: T }));
    expect(treeIds(first.trees)).toEqual([[idOf(1)], [idOf(0)]]);
    const writer = new Database(path);
    writer.pragma("journal_mode = WAL");
    try {
      writer.prepare("UPDATE session SET time_updated = ? WHERE id = ?").run(T + 90_000, idOf(0));
      writer.exec("BEGIN IMMEDIATE"); // opencode busy writing the next step: the tick does not wait
      writer.prepare("UPDATE session SET time_updated = ? WHERE id = ?").run(T + 95_000, idOf(1));
      const next = await readDbSource(opts(path, { since: T + 80_000, busyTimeoutMs: 0 }));
      expect(next.state).toBe("read");
      expect(treeIds(next.trees)).toEqual([[idOf(0)]]);
      writer.exec("COMMIT");
      const after = await readDbSource(opts(path, { since: T + 80_000 }));
      expect(treeIds(after.trees)).toEqual([[idOf(1)], [idOf(0)]]);
    } finally {
      writer.close();
    }
  });

  test("bounded per tick: the newest sessions first, the rest said to wait", async () => {
    const path = fixture([session(0, T + 60_000), session(1, T + 61_000), session(2, T + 62_000)]);
    const bySessions = await readDbSource(opts(path, { maxSessions: 2 }));
    expect(bySessions).toMatchObject({ active: 2, truncated: true });
    expect(treeIds(bySessions.trees)).toEqual([[idOf(2)], [idOf(1)]]);
    // A session is 26 message and part rows: the budget stops after the tree that crosses it.
    const byRows = await readDbSource(opts(path, { maxRows: 30 }));
    expect(byRows.truncated).toBe(true);
    expect(treeIds(byRows.trees)).toEqual([[idOf(2)], [idOf(1)]]);
  });

  test("malformed rows are counted and skipped; a database of nothing but is not 'all healthy'", async () => {
    const path = fixture([session(0, T + 60_000), session(1, T + 61_000)]);
    const w = new Database(path);
    w.prepare("UPDATE part SET data = 'not json' WHERE session_id = ? AND rowid % 2 = 0").run(idOf(0));
    w.close();
    const some = await readDbSource(opts(path));
    expect(some.state).toBe("read");
    expect(some.malformed).toBe(6);
    const all = fixture([session(4, T + 60_000)]);
    const w2 = new Database(all);
    w2.exec(`UPDATE part SET data = '{"kind":"v2"}'; UPDATE message SET data = '{"kind":"v2"}'`);
    w2.close();
    const none = await readDbSource(opts(all));
    expect(none).toMatchObject({ state: "unexpected_shape", trees: [], malformed: 26 });
    expect(none.detail).toContain("none of 26 message/part row(s)");
  });

  test("missing, unreadable and foreign files are states, never throws", async () => {
    expect(await readDbSource(opts(join(tmp, "absent.db")))).toMatchObject({
      state: "missing",
      detail: null,
    });
    const garbage = join(tmp, "garbage.db");
    writeFileSync(garbage, "not sqlite at all ".repeat(200));
    const bad = await readDbSource(opts(garbage));
    expect(bad.state).toBe("unreadable");
    expect(bad.detail).toContain(garbage);
    const foreign = join(tmp, "foreign.db");
    new Database(foreign).exec("CREATE TABLE notes (x)").close();
    expect(await readDbSource(opts(foreign))).toMatchObject({
      state: "unexpected_shape",
      detail: 'not an opencode database: no "session" table',
    });
  });
});
