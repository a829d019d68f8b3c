// The gate's writer thread on a real SQLite file: it stores exactly what the
// main thread would (rows compared table by table), none of it through the
// main connection (a bad item: gate-writes.test.ts, both ways); a lock held
// by another connection queues the batch and the retry lands it; a thread
// that dies hands its writes back to the main thread, nothing lost, and a
// batch it committed just before it died is not written twice.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { served } from "../breaker/testing.ts";
import type { GateIdentity } from "../gate/types.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import type { WriterThread } from "./writer-thread.ts";

const T0 = 1_800_000_000_000;
const link = { instanceId: "inst-1", reportTo: "http://127.0.0.1:4870", state: "ok" as const };
const who: GateIdentity = { sessionId: "w", agent: "build", parent: "root", pluginVersion: "0.1.0", link };

describe("the gate's writer thread", () => {
  let dir: string;
  const stores: SqliteStore[] = [];
  const logs: string[] = [];
  const statements: string[] = [];
  const open = async (name: string, writerThread: boolean) => {
    const s = await openSqliteStore(join(dir, name), {
      writerThread,
      busyTimeoutMs: 50,
      log: (l) => logs.push(l),
      verbose: (sql) => statements.push(String(sql)),
    });
    stores.push(s);
    return s;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sg-writer-thread-"));
    logs.length = 0;
    statements.length = 0;
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** n requests of two sessions over `ms` milliseconds, with a turn of the event loop every 10. */
  const burst = async (store: SqliteStore, n: number, ms: number) => {
    for (let i = 0; i < n; i++) {
      const at = T0 + Math.floor((i * ms) / n);
      const id = i % 2 ? who : { ...who, sessionId: "v", link: { ...link, state: "failing" as const } };
      store.decide(id, at);
      store.recordRequest({ ...served("m", id.sessionId as string, at, "root"), plugin_version: "0.1.0" });
      if (i % 10 === 9) await new Promise((r) => setImmediate(r));
    }
    await store.flush();
  };
  const rows = (store: SqliteStore) => ({
    requests: store.db.prepare("SELECT * FROM requests ORDER BY seq").all(),
    sessions: store.db
      .prepare(
        "SELECT session_id, parent_id, root_id, agent, last_seen_at, plugin_version, plugin_headers_at FROM sessions ORDER BY session_id",
      )
      .all(),
    links: store.db.prepare("SELECT * FROM plugin_links ORDER BY instance_id").all(),
  });

  it("stores what the main thread would, none of it through the main connection", async () => {
    const here = await open("here.db", false);
    await burst(here, 400, 25_000);
    const there = await open("there.db", true);
    statements.length = 0;
    await burst(there, 400, 25_000);
    expect(statements.filter((s) => /^(INSERT|UPDATE)/.test(s))).toEqual([]);
    const stored = rows(there);
    expect(stored.requests).toHaveLength(400);
    expect(stored).toEqual(rows(here));
    expect(logs).toEqual([]);
  });

  it("a write lock held by another connection queues the batch; the retry lands it once", async () => {
    const store = await open("s.db", true);
    const other = new Database(join(dir, "s.db"));
    other.prepare("BEGIN IMMEDIATE").run();
    for (let i = 0; i < 5; i++) store.recordRequest(served("m", "w", T0 + i, "root"));
    await store.flush();
    expect(store.writes.stats.busy).toBeGreaterThan(0);
    expect(store.writes.blocked).toBe(true);
    other.prepare("COMMIT").run();
    other.close();
    await store.writes.drain();
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM requests").get()).toEqual({ n: 5 });
    expect(store.writes.stats.retried).toBe(1);
    expect(store.writes.blocked).toBe(false);
  });

  it("a thread that dies hands its writes back to the main thread: nothing is lost", async () => {
    const store = await open("s.db", true);
    await burst(store, 20, 100);
    const thread = (store.writes as unknown as { opts: { offload: WriterThread } }).opts.offload;
    await (thread as unknown as { worker: Worker }).worker.terminate();
    await new Promise((r) => setImmediate(r));
    statements.length = 0;
    await burst(store, 20, 100);
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM requests").get()).toEqual({ n: 40 });
    expect(statements.filter((s) => s.startsWith("INSERT INTO requests"))).toHaveLength(20);
    expect(logs.filter((l) => l.includes("writer thread exited"))).toHaveLength(1);
  });

  it("a thread that dies after its commit, before its answer is read: the batch written again adds nothing", async () => {
    const store = await open("s.db", true);
    await burst(store, 20, 100);
    const thread = (store.writes as unknown as { opts: { offload: WriterThread } }).opts.offload;
    const worker = (thread as unknown as { worker: Worker }).worker;
    // The next answer is committed on the thread but never reaches the main thread: the thread exits instead.
    worker.removeAllListeners("message");
    worker.on("message", (m: { type: string }) => {
      if (m.type === "done") void worker.terminate();
    });
    statements.length = 0;
    await burst(store, 20, 100);
    expect(logs.filter((l) => l.includes("writer thread exited"))).toHaveLength(1);
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM requests").get()).toEqual({ n: 40 });
    // The main thread wrote the batch again: it found its records there and wrote none.
    expect(statements.filter((s) => s.startsWith("SELECT 1 AS one FROM requests"))).toHaveLength(1);
    expect(statements.filter((s) => s.startsWith("INSERT INTO requests"))).toHaveLength(0);
    await burst(store, 20, 100); // and what comes next is written by the main thread
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM requests").get()).toEqual({ n: 60 });
  });

  it("an in-memory database has no writer thread (it cannot be shared): the main thread writes", async () => {
    const store = await openSqliteStore(":memory:", { writerThread: true });
    stores.push(store);
    store.recordRequest(served("m", "w", T0, "root"));
    await store.flush();
    expect(store.db.prepare("SELECT COUNT(*) AS n FROM requests").get()).toEqual({ n: 1 });
    expect((store.writes as unknown as { opts: { offload?: unknown } }).opts.offload).toBeUndefined();
  });
});
