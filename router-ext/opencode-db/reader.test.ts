// The shared read-only reader on real SQLite files shaped as opencode 1.18.33
// writes them (bench/core-opencode-db.ts): malformed rows counted and
// skipped, a shape it does not know refused by name, reads while another
// connection writes in WAL mode, and the file left as it was.
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, test } from "vitest";
import { syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { defaultPolicy } from "../../bench/core-stats.ts";
import { observationsFromMessages, observeOptions } from "../../shared/index.ts";
import { opencodeDataDir, opencodeDbPath } from "./path.ts";
import { OpencodeDb, OpencodeDbError } from "./reader.ts";

const tmp = mkdtempSync(join(tmpdir(), "stallguard-ocdb-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const policy = defaultPolicy();
const opts = observeOptions(policy);

type Stored = { info: { id: string }; parts: unknown[] };

/** A fresh opencode-shaped database with `sessions` synthetic looping sessions of 10 calls. */
function fixture(sessions = 2): string {
  const path = join(tmp, `oc${++n}.db`);
  writeOpencodeDb(
    path,
    Array.from({ length: sessions }, (_, i) => syntheticSession(i, 10, { loopEvery: 1 })),
  );
  return path;
}

const problem = (fn: () => unknown): OpencodeDbError => {
  try {
    fn();
  } catch (err) {
    if (err instanceof OpencodeDbError) return err;
    throw err;
  }
  throw new Error("no error");
};

describe("opencodeDbPath: opencode db path's rules", () => {
  test("OPENCODE_DB absolute or relative to the data dir; :memory: is no file; else the data dir", () => {
    expect(opencodeDbPath({ OPENCODE_DB: "/x/y.db", HOME: "/h" })).toBe("/x/y.db");
    expect(opencodeDbPath({ OPENCODE_DB: "other.db", XDG_DATA_HOME: "/data" })).toBe(
      "/data/opencode/other.db",
    );
    expect(opencodeDbPath({ OPENCODE_DB: ":memory:" })).toBeNull();
    expect(opencodeDbPath({ XDG_DATA_HOME: "/data" })).toBe("/data/opencode/opencode.db");
    expect(opencodeDbPath({ HOME: "/h" })).toBe("/h/.local/share/opencode/opencode.db");
    // A relative XDG_DATA_HOME is ignored, as the XDG spec says.
    expect(opencodeDataDir({ XDG_DATA_HOME: "rel", HOME: "/h" })).toBe("/h/.local/share/opencode");
  });
});

describe("OpencodeDb", () => {
  test("reads sessions, messages and parts back; tool output is hashed, never kept", () => {
    const db = OpencodeDb.open(fixture(1));
    try {
      const { rows, malformed } = db.allSessions();
      expect(malformed).toBe(0);
      expect(rows.map((r) => [r.id, r.parentId, r.title])).toEqual([["ses_00000000bench", null, "bench 0"]]);
      const read = db.messages("ses_00000000bench");
      expect(read).toMatchObject({ rows: 22, malformed: 0 });
      expect(read.messages).toHaveLength(11);
      const tool = (read.messages as Stored[])[1]?.parts[0] as { state: Record<string, unknown> };
      expect(tool).toMatchObject({ type: "tool", tool: "read", callID: "call_1", id: "prt_00000000000001" });
      // These looping reads stored no answer: the hash says so (null).
      expect(tool.state).toMatchObject({ status: "completed", stallguard_outcome: null });
    } finally {
      db.close();
    }
  });

  test("keeps only what the detection core reads: no step parts, no answer, metadata cut to its keys", () => {
    const path = join(tmp, `oc${++n}.db`);
    const doc = syntheticSession(3, 40, { steps: true });
    writeOpencodeDb(path, [doc]);
    const db = OpencodeDb.open(path);
    try {
      const read = db.messages(doc.info.id);
      const stored = doc.messages.flatMap((m) => m.parts);
      expect(read).toMatchObject({ rows: doc.messages.length + stored.length, malformed: 0 });
      expect(stored.some((p) => p.type === "step-start" || p.type === "patch")).toBe(true);
      const parts = (read.messages as Stored[]).flatMap((m) => m.parts) as Array<Record<string, unknown>>;
      // The user's text part and every tool part; the step markers and patch parts are never read.
      expect(parts.map((p) => p.type)).toEqual(["text", ...Array(40).fill("tool")]);
      const bash = parts.find((p) => p.tool === "bash") as { id: string; state: Record<string, unknown> };
      const original = stored.find((p) => p.id === bash.id) as {
        state: { metadata: Record<string, unknown> };
      };
      expect(Object.keys(original.state.metadata)).toEqual(["output", "exit", "truncated"]);
      expect(Object.keys(bash.state).sort()).toEqual([
        "input",
        "metadata",
        "stallguard_outcome",
        "status",
        "time",
      ]);
      expect(bash.state.metadata).toEqual({ exit: original.state.metadata.exit });
      expect(bash.state.stallguard_outcome).toMatch(/^[0-9a-f]{32}$/);
      const info = (read.messages as Stored[])[1]?.info as Record<string, unknown>;
      expect(info).toMatchObject({ role: "assistant", agent: "build", id: doc.messages[1]?.info.id });
      expect(info.summary).toBeUndefined();
    } finally {
      db.close();
    }
  });

  test("observations(): what the adapter makes of messages(), the step parts left unread in SQLite", () => {
    const path = join(tmp, `oc${++n}.db`);
    const docs = [
      syntheticSession(4, 40, { steps: true }),
      syntheticSession(5, 30, { steps: true, loopEvery: 1 }),
    ];
    writeOpencodeDb(path, docs);
    const w = new Database(path);
    // Read whatever it holds besides: a second "type" key, a \u escape, a nested step type in a tool's input.
    w.prepare(
      `UPDATE part SET data = '{"snapshot":"s","type":"step-start","x":{"type":"text"}}' WHERE id = 'prt_00000004000001' || '0'`,
    ).run();
    w.prepare(
      `UPDATE part SET data = '{"snapshot":"s\\u0041","type":"step-start"}' WHERE id = 'prt_00000004000002' || '0'`,
    ).run();
    w.prepare(
      `UPDATE part SET data = json_set(data, '$.state.input.extra', json('{"type":"patch"}')) WHERE id = 'prt_00000004000003' || '1'`,
    ).run();
    w.close();
    const db = OpencodeDb.open(path);
    try {
      for (const doc of docs) {
        const session = { id: doc.info.id, parentId: null, directory: "/PROJECT_DIR" };
        const fromRecords = db.messages(doc.info.id);
        const read = db.observations(session, opts);
        expect(read.observations).toEqual(observationsFromMessages(session, fromRecords.messages, opts));
        expect(read.observations.filter((o) => o.kind === "tool")).toHaveLength(doc.messages.length - 1);
        // Only the messages and their text and tool parts (plus the two step rows above) came out of SQLite.
        const extra = doc.info.id.includes("00000004") ? 2 : 0;
        expect(fromRecords.rows).toBeGreaterThan(3 * doc.messages.length);
        expect(read).toMatchObject({ rows: 2 * doc.messages.length + extra, malformed: 0 });
      }
    } finally {
      db.close();
    }
  });

  test("a message's parts come in id order whatever order they were written in", () => {
    const docs = [
      syntheticSession(6, 30, { steps: true }),
      syntheticSession(7, 20, { steps: true, loopEvery: 1 }),
    ];
    const inOrder = join(tmp, `oc${++n}.db`);
    const reversed = join(tmp, `oc${++n}.db`);
    writeOpencodeDb(inOrder, docs);
    writeOpencodeDb(reversed, docs);
    // Three more calls in one assistant message (parallel tool calls), written in id order in one file and last first in the other.
    const extra = (path: string, order: number[]) => {
      const w = new Database(path);
      const tool = w
        .prepare(
          `SELECT message_id, session_id, data FROM part WHERE data LIKE '%"type":"tool"%' ORDER BY id LIMIT 1`,
        )
        .get() as { message_id: string; session_id: string; data: string };
      const add = w.prepare(
        `INSERT INTO part (id, message_id, session_id, time_created, time_updated, data)
         VALUES (?, ?, ?, 1, 1, json_set(?, '$.callID', ?, '$.state.input.filePath', ?))`,
      );
      for (const i of order)
        add.run(
          `prt_zz${i}`,
          tool.message_id,
          tool.session_id,
          tool.data,
          `call_z${i}`,
          `/PROJECT_DIR/z${i}.ts`,
        );
      w.close();
    };
    extra(inOrder, [1, 2, 3]);
    extra(reversed, [3, 2, 1]);
    const w = new Database(reversed);
    // Every row written again last first: the table (and its session index) holds them in reverse id order.
    w.exec(
      "CREATE TEMP TABLE p AS SELECT * FROM part ORDER BY id DESC; DELETE FROM part; INSERT INTO part SELECT * FROM p",
    );
    w.close();
    const a = OpencodeDb.open(inOrder);
    const b = OpencodeDb.open(reversed);
    try {
      for (const doc of docs) {
        const session = { id: doc.info.id, parentId: null, directory: "/PROJECT_DIR" };
        expect(b.observations(session, opts)).toEqual(a.observations(session, opts));
        expect(b.messages(doc.info.id)).toEqual(a.messages(doc.info.id));
      }
      const first = b.messages(docs[0]?.info.id as string).messages as Stored[];
      const calls = first.flatMap((m) =>
        m.parts.map((p) => (p as { callID?: string }).callID).filter(Boolean),
      );
      expect(calls.slice(0, 4)).toEqual(["call_1", "call_z1", "call_z2", "call_z3"]);
    } finally {
      a.close();
      b.close();
    }
  });

  test("malformed rows are counted and skipped: bad JSON, no type or role, wrong column types", () => {
    const path = fixture(1);
    const w = new Database(path);
    w.prepare("UPDATE part SET data = '{oops' WHERE id = 'prt_00000000000001'").run();
    w.prepare("UPDATE part SET data = '[1,2]' WHERE id = 'prt_00000000000002'").run();
    w.prepare(`UPDATE part SET data = '{"tool":"read"}' WHERE id = 'prt_00000000000003'`).run();
    w.prepare(`UPDATE message SET data = '{"agent":"build"}' WHERE id = 'msg_00000000000004'`).run();
    // A part whose message is not there (a writer without foreign keys): never observed, still counted when malformed.
    w.pragma("foreign_keys = OFF");
    w.prepare(
      "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES ('prt_orphan', 'msg_gone', 'ses_00000000bench', 1, 1, '{oops')",
    ).run();
    // SQLite keeps a blob in a text column, and text in an integer one.
    w.prepare(
      "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated) VALUES ('ses_badparent', 'p', X'2a', 's', '/d', 't', '1', 1, 2)",
    ).run();
    w.prepare(
      "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES ('ses_badtime', 'p', 's', '/d', 't', '1', 1, 'soon')",
    ).run();
    w.close();
    const db = OpencodeDb.open(path);
    try {
      const all = db.allSessions();
      expect(all.rows.map((r) => r.id)).toEqual(["ses_00000000bench"]);
      expect(all.malformed).toBe(2);
      expect(db.session("ses_badparent")).toBe("malformed");
      expect(db.session("ses_nope")).toBeNull();
      const read = db.messages("ses_00000000bench");
      expect(read.malformed).toBe(5);
      const observed = db.observations({ id: "ses_00000000bench", parentId: null }, opts);
      expect(observed.malformed).toBe(5);
      expect(observed.observations).toEqual(
        observationsFromMessages({ id: "ses_00000000bench", parentId: null }, read.messages, opts),
      );
      // Message 4 is dropped with its part; messages 1 to 3 are kept without their bad parts.
      expect(read.messages).toHaveLength(10);
      expect((read.messages as Stored[]).filter((m) => m.parts.length === 0).map((m) => m.info.id)).toEqual([
        "msg_00000000000001",
        "msg_00000000000002",
        "msg_00000000000003",
      ]);
    } finally {
      db.close();
    }
  });

  test("a shape it does not know is refused by name; a missing or non-SQLite file likewise", () => {
    /** The database at `path` after `sql`, opened: refused as an unexpected shape, with this message. */
    const refusedShape = (path: string, sql: string, message: string) => {
      const db = new Database(path);
      db.exec(sql);
      db.close();
      expect(problem(() => OpencodeDb.open(path))).toMatchObject({ kind: "unexpected_shape", message });
    };
    refusedShape(
      join(tmp, "no-message.db"),
      "CREATE TABLE session (id text); CREATE TABLE part (id text)",
      'not an opencode database: no "message" table',
    );
    refusedShape(
      fixture(1),
      "ALTER TABLE session DROP COLUMN title",
      'unexpected opencode database shape: "session" has no "title" column',
    );
    const missing = join(tmp, "missing.db");
    expect(problem(() => OpencodeDb.open(missing))).toMatchObject({ kind: "missing", path: missing });
    expect(existsSync(missing)).toBe(false);
    const garbage = join(tmp, "garbage.db");
    writeFileSync(garbage, "this is not a database, it only has the name of one ".repeat(100));
    expect(problem(() => OpencodeDb.open(garbage))).toMatchObject({ kind: "unreadable" });
    expect(problem(() => OpencodeDb.open(tmp)).kind).toBe("unreadable");
  });

  test("WAL: reads while another connection writes; a snapshot sees committed rows only, the next one the new rows", () => {
    const path = fixture(1);
    const writer = new Database(path);
    writer.pragma("journal_mode = WAL");
    const db = OpencodeDb.open(path, { busyTimeoutMs: 0 });
    try {
      writer.exec("BEGIN IMMEDIATE");
      writer
        .prepare(
          "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES ('ses_new', 'p', 's', '/d', 't', '1', 5, 5)",
        )
        .run();
      // The writer holds the write lock with a row not yet committed: the read neither waits nor sees it.
      expect(db.snapshot(() => db.allSessions().rows.map((r) => r.id))).toEqual(["ses_00000000bench"]);
      // A snapshot stays one snapshot even when a commit lands in the middle of it.
      const seen = db.snapshot(() => {
        const before = db.allSessions().rows.length;
        writer.exec("COMMIT");
        return [before, db.allSessions().rows.length];
      });
      expect(seen).toEqual([1, 1]);
      expect(db.allSessions().rows.map((r) => r.id)).toEqual(["ses_new", "ses_00000000bench"]);
      expect(db.updatedSince(5, 10).rows.map((r) => r.id)).toEqual(["ses_00000000bench", "ses_new"]);
      expect(db.updatedSince(1_900_000_000_000, 10).rows).toEqual([]);
    } finally {
      db.close();
      writer.close();
    }
  });

  test("never writes: the file's bytes are the same after reading", () => {
    const path = fixture(3);
    const sha = () => createHash("sha256").update(readFileSync(path)).digest("hex");
    const before = sha();
    const db = OpencodeDb.open(path);
    for (const s of db.allSessions().rows) db.messages(s.id);
    db.close();
    expect(sha()).toBe(before);
  });
});
