// Loading calibration sessions: export files, an opencode.db read strictly
// read-only (a real SQLite file, also while another connection holds the
// write lock), and a live server's HTTP API (a real HTTP server on loopback).
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { type ExportDoc, syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import {
  applyFilters,
  defaultOpencodeDb,
  loadExports,
  loadOpencodeDb,
  loadServer,
  sessionsFromExport,
} from "../../router-ext/calibrate/sources.ts";
import {
  configSchema,
  observeOptions,
  policyFromConfig,
  type ReplaySession,
  replay,
} from "../../shared/index.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
const recorded = (name: string) =>
  JSON.parse(readFileSync(join(RECORDED, `${name}.json`), "utf8")) as ExportDoc;

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "stallguard-cal-src-"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const sha = (path: string) => createHash("sha256").update(readFileSync(path)).digest("hex");

describe("export files", () => {
  test("a directory: every export plus its labels.json; bad files are skipped with a warning", () => {
    const dir = mkdtempSync(join(tmp, "exp-"));
    writeFileSync(join(dir, "a.json"), JSON.stringify(recorded("edit-test")));
    writeFileSync(join(dir, "b.json"), JSON.stringify([recorded("sub-agent"), recorded("sub-agent-child")]));
    writeFileSync(join(dir, "broken.json"), "{not json");
    writeFileSync(join(dir, "other.json"), JSON.stringify({ hello: 1 }));
    const child = recorded("sub-agent-child");
    writeFileSync(
      join(dir, "labels.json"),
      JSON.stringify({ [child.info.id]: { label: "healthy", note: "x" }, other: "loop" }),
    );
    const r = loadExports([dir]);
    expect(r.sessions.map((s) => s.id)).toEqual([
      recorded("edit-test").info.id,
      recorded("sub-agent").info.id,
      child.info.id,
    ]);
    expect(r.sessions[2]?.parentId).toBe(recorded("sub-agent").info.id);
    expect(r.sessions[0]?.directory).toBe("/PROJECT_DIR");
    expect(r.labels).toEqual({ [child.info.id]: "healthy", other: "loop" });
    expect(r.warnings).toHaveLength(2);
    expect(r.warnings.join("\n")).toMatch(/broken\.json: skipped/);
    expect(r.warnings.join("\n")).toMatch(/other\.json: skipped: not an opencode export: info/);
  });

  test("a missing path is an error naming it", () => {
    expect(() => loadExports([join(tmp, "nope.json")])).toThrow(/no such file or directory: .*nope\.json/);
  });

  test("sessionsFromExport rejects a wrong shape with the path of the problem", () => {
    expect(() => sessionsFromExport({ info: { id: "x" }, messages: "no" })).toThrow(/messages/);
    expect(() => sessionsFromExport([{ info: { id: "" }, messages: [] }])).toThrow(/0\.info\.id/);
  });
});

describe("filters", () => {
  const rows = [
    { id: "a", parentId: null, updated: 100 },
    { id: "b", parentId: "a", updated: 50 },
    { id: "c", parentId: "b", updated: 40 },
    { id: "d", parentId: null, updated: 10 },
  ];
  test("--session keeps the session and its descendants", () => {
    expect(applyFilters(rows, { sessionIds: ["a"] }).map((r) => r.id)).toEqual(["a", "b", "c"]);
    expect(applyFilters(rows, { sessionIds: ["b"] }).map((r) => r.id)).toEqual(["b", "c"]);
  });
  test("--since keeps recently updated sessions and their descendants", () => {
    expect(applyFilters(rows, { since: 60 }).map((r) => r.id)).toEqual(["a", "b", "c"]);
    expect(applyFilters(rows, { since: 5 }).map((r) => r.id)).toEqual(["a", "b", "c", "d"]);
    expect(applyFilters(rows, { since: 1000 })).toEqual([]);
  });
  test("no filters keep everything", () => {
    expect(applyFilters(rows, {})).toHaveLength(4);
  });
});

describe("opencode.db, read-only", () => {
  let dbPath: string;
  beforeAll(() => {
    dbPath = join(tmp, "opencode.db");
    writeOpencodeDb(dbPath, [
      recorded("read-loop"),
      recorded("sub-agent"),
      recorded("sub-agent-child"),
      syntheticSession(7, 30),
    ]);
  });

  test("reads the stored shape back: the same calls as the export, parents kept", async () => {
    const r = await loadOpencodeDb(dbPath);
    expect(r.warnings).toEqual([]);
    const byId = new Map(r.sessions.map((s) => [s.id, s]));
    const loop = byId.get(recorded("read-loop").info.id);
    expect(loop?.messages).toHaveLength(recorded("read-loop").messages.length);
    const first = loop?.messages[1] as {
      info: { id: string; role: string };
      parts: Array<Record<string, unknown>>;
    };
    expect(first.info.role).toBe("assistant");
    const tool = first.parts.find((p) => p.type === "tool") as { state: Record<string, unknown> };
    // Tool output is dropped on load; only its hash is kept (the same-result signal needs it).
    expect(tool.state.output).toBeUndefined();
    expect(tool.state.stallguard_outcome).toMatch(/^[0-9a-f]{32}$/);
    const original = recorded("read-loop").messages[1]?.parts.find((p) => p.type === "tool") as {
      state: { input: unknown; output: unknown };
    };
    expect(original.state.output).toBeTypeOf("string");
    expect(tool.state.input).toEqual(original.state.input);
    expect(byId.get(recorded("sub-agent-child").info.id)?.parentId).toBe(recorded("sub-agent").info.id);
  });

  test("the recorded corpus replays the same from opencode.db as from its exports (answers hashed on load)", async () => {
    const docs = readdirSync(RECORDED)
      .filter((f) => f.endsWith(".json") && f !== "labels.json")
      .map((f) => JSON.parse(readFileSync(join(RECORDED, f), "utf8")) as ExportDoc);
    const path = join(tmp, "recorded.db");
    writeOpencodeDb(path, docs);
    // Thresholds low enough that a polling session whose answer moves differs from one that repeats it.
    const policy = policyFromConfig(
      configSchema.parse({ thresholds: { top_warn: 3, stall_turns: 2, dup_warn: 0.2, fail_warn: 2 } }),
    );
    const view = (sessions: ReplaySession[]) =>
      replay(sessions, policy)
        .map((r) => `${r.id} ${r.worst} ${r.first_flag_call} ${r.reason}`)
        .sort();
    const fromDb = await loadOpencodeDb(path);
    expect(view(fromDb.sessions)).toEqual(view(loadExports([RECORDED]).sessions));
    expect(view(fromDb.sessions).filter((l) => !l.includes(" ok "))).toHaveLength(10);
    // What calibrate --db reads: observations made as each session is read, no stored records kept.
    const observe = observeOptions(policy);
    const observed = await loadOpencodeDb(path, { observe });
    expect(observed.sessions.every((x) => x.messages.length === 0 && x.observed)).toBe(true);
    expect(replay(observed.sessions, policy, { timeline: true })).toEqual(
      replay(fromDb.sessions, policy, { timeline: true }),
    );
    // Observations made with other test patterns would judge another way: the replay refuses them.
    const other = { ...policy, testPatterns: [/^make check/] };
    expect(() => replay(observed.sessions, other)).toThrow(/other test patterns/);
  });

  test("never changes the file: same bytes and mtime after a plain and a --copy read", async () => {
    const before = { hash: sha(dbPath), mtime: statSync(dbPath).mtimeMs };
    await loadOpencodeDb(dbPath);
    await loadOpencodeDb(dbPath, { copy: true });
    expect(sha(dbPath)).toBe(before.hash);
    expect(statSync(dbPath).mtimeMs).toBe(before.mtime);
  });

  test("--copy reads the same sessions and leaves no temp copy behind", async () => {
    const temps = () => readdirSync(tmpdir()).filter((n) => n.startsWith("stallguard-calibrate-")).length;
    const before = temps();
    const plain = await loadOpencodeDb(dbPath);
    const copied = await loadOpencodeDb(dbPath, { copy: true });
    expect(copied.sessions).toEqual(plain.sessions);
    expect(temps()).toBeLessThanOrEqual(before);
  });

  test("works while another connection holds the write lock, and sees only committed data", async () => {
    const writer = new Database(dbPath);
    try {
      writer.pragma("busy_timeout = 0");
      writer.exec("BEGIN IMMEDIATE");
      writer
        .prepare(
          "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES ('ses_uncommitted', 'p', 's', '/d', 't', '1', 1, 1)",
        )
        .run();
      const r = await loadOpencodeDb(dbPath);
      expect(r.sessions.map((s) => s.id)).not.toContain("ses_uncommitted");
      expect(r.sessions).toHaveLength(4);
      const c = await loadOpencodeDb(dbPath, { copy: true });
      expect(c.sessions).toHaveLength(4);
      writer.exec("ROLLBACK");
    } finally {
      writer.close();
    }
  });

  test("filters by session (with sub-agents) and by time", async () => {
    const parent = recorded("sub-agent").info.id;
    const r = await loadOpencodeDb(dbPath, { sessionIds: [parent] });
    expect(r.sessions.map((s) => s.id).sort()).toEqual([parent, recorded("sub-agent-child").info.id].sort());
    const late = await loadOpencodeDb(dbPath, { since: 1_900_000_000_000 });
    expect(late.sessions).toEqual([]);
  });

  test("a missing file is an error and is not created", async () => {
    const missing = join(tmp, "missing.db");
    await expect(loadOpencodeDb(missing)).rejects.toThrow(/cannot open .*missing\.db read-only/);
    expect(existsSync(missing)).toBe(false);
  });

  test("a database without opencode's tables is refused by name", async () => {
    const other = join(tmp, "other.db");
    const db = new Database(other);
    db.exec("CREATE TABLE session (id text)");
    db.close();
    await expect(loadOpencodeDb(other)).rejects.toThrow(/not an opencode database: no "message" table/);
  });

  test("unreadable JSON rows are skipped with a warning, not thrown on", async () => {
    const bad = join(tmp, "bad.db");
    writeOpencodeDb(bad, [syntheticSession(1, 5)]);
    const db = new Database(bad);
    db.prepare("UPDATE part SET data = '{oops' WHERE rowid = 1").run();
    db.close();
    const r = await loadOpencodeDb(bad);
    expect(r.sessions).toHaveLength(1);
    expect(r.warnings).toEqual(["1 malformed session/message/part row(s) skipped"]);
  });

  test("default path follows OPENCODE_DB and XDG_DATA_HOME", () => {
    expect(defaultOpencodeDb({ OPENCODE_DB: "/x/y.db" })).toBe("/x/y.db");
    expect(defaultOpencodeDb({ XDG_DATA_HOME: "/data" })).toBe("/data/opencode/opencode.db");
    expect(defaultOpencodeDb({})).toMatch(/\.local\/share\/opencode\/opencode\.db$/);
  });
});

describe("live server API", () => {
  let server: Server;
  let url: string;
  const seen: string[] = [];
  let mode: "ok" | "bad-shape" | "error" = "ok";
  const docs = [recorded("sub-agent"), recorded("sub-agent-child"), recorded("bash-retry-loop")];
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.url ?? "");
      const u = new URL(req.url ?? "/", "http://x");
      res.setHeader("content-type", "application/json");
      if (mode === "error") {
        res.statusCode = 500;
        return res.end("{}");
      }
      if (u.pathname === "/session") {
        if (mode === "bad-shape") return res.end(JSON.stringify({ sessions: [] }));
        return res.end(JSON.stringify([...docs].reverse().map((d) => d.info)));
      }
      const m = /^\/session\/([^/]+)\/message$/.exec(u.pathname);
      const doc = docs.find((d) => d.info.id === m?.[1]);
      if (!doc) {
        res.statusCode = 404;
        return res.end("{}");
      }
      res.end(JSON.stringify(doc.messages));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  afterEach(() => {
    mode = "ok";
    seen.length = 0;
  });

  test("lists every session (past the default limit of 100) and reads each one's messages", async () => {
    const r = await loadServer(url);
    expect(r.sessions.map((s) => s.id).sort()).toEqual(docs.map((d) => d.info.id).sort());
    expect(seen[0]).toMatch(/^\/session\?limit=1000000$/);
    expect(r.sessions.find((s) => s.id === docs[1]?.info.id)?.parentId).toBe(docs[0]?.info.id);
    expect(r.sessions.find((s) => s.id === docs[2]?.info.id)?.messages).toHaveLength(
      docs[2]?.messages.length ?? -1,
    );
  });

  test("--since is passed as start=, --session narrows the reads", async () => {
    const r = await loadServer(url, { since: 5, sessionIds: [docs[0]?.info.id as string] });
    expect(seen[0]).toContain("start=5");
    expect(r.sessions).toHaveLength(2);
    expect(seen.filter((p) => p.endsWith("/message"))).toHaveLength(2);
  });

  test("a wrong shape or an HTTP error is an error, never an empty result", async () => {
    mode = "bad-shape";
    await expect(loadServer(url)).rejects.toThrow(/GET \/session: unexpected shape/);
    mode = "error";
    await expect(loadServer(url)).rejects.toThrow(/HTTP 500/);
    await expect(loadServer("http://127.0.0.1:9")).rejects.toThrow(/GET http:\/\/127\.0\.0\.1:9\/session/);
  });
});
