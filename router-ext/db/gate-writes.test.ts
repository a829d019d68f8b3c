// What a busy gate writes per request, counted statement by statement on a
// real SQLite file: every record, but a session's identity once, its
// last-seen time at most once a second, its plugin's headers and its plugin
// process's link at most once in ten (a link whose state changed at once).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { served } from "../breaker/testing.ts";
import type { GateIdentity } from "../gate/types.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { emptyGateBatch, type GateBatch, writeGateBatch } from "./gate-batch.ts";
import { GateWrites } from "./gate-writes.ts";
import { WriteQueue } from "./write-queue.ts";

const T0 = 1_800_000_000_000;

describe("the gate's batched writes", () => {
  let dir: string;
  let store: SqliteStore;
  const statements: string[] = [];
  const count = (re: RegExp) => statements.filter((s) => re.test(s)).length;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-gate-writes-"));
    store = await openSqliteStore(join(dir, "s.db"), { verbose: (sql) => statements.push(String(sql)) });
    statements.length = 0;
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const who: GateIdentity = { sessionId: "w", agent: "build", parent: "root", pluginVersion: "0.1.0" };
  /** n requests of `id`, one a millisecond from `from`, in batches of 20. */
  const burst = async (id: GateIdentity, from: number, n: number) => {
    for (let i = 0; i < n; i++) {
      store.decide(id, from + i);
      store.recordRequest({ ...served("m", "w", from + i, "root"), plugin_version: "0.1.0" });
      if (i % 20 === 19) await store.flush();
    }
    await store.flush();
  };
  const row = () =>
    store.db
      .prepare("SELECT root_id, last_seen_at, plugin_headers_at FROM sessions WHERE session_id = 'w'")
      .get();

  it("writes every record, the identity once, the last-seen times throttled", async () => {
    await burst(who, T0, 200);
    expect(count(/^INSERT INTO requests/)).toBe(200);
    expect(count(/^INSERT INTO sessions/)).toBe(1);
    expect(count(/^UPDATE sessions SET parent_id/)).toBe(0);
    expect(count(/^UPDATE sessions SET plugin_version/)).toBe(1);
    expect(count(/^UPDATE sessions SET last_seen_at/)).toBe(1);
    expect(count(/^BEGIN/)).toBe(10);
    // Within a batch the latest time wins; later batches within the second write none.
    expect(row()).toEqual({ root_id: "root", last_seen_at: T0 + 19, plugin_headers_at: T0 + 19 });

    statements.length = 0;
    await burst(who, T0 + 1500, 20); // a second on: last_seen_at moves, plugin_headers_at not yet
    expect(count(/^UPDATE sessions SET last_seen_at/)).toBe(1);
    expect(count(/^UPDATE sessions SET plugin_version/)).toBe(0);
    await burst(who, T0 + 11_000, 1); // ten seconds on: both move
    expect(row()).toEqual({ root_id: "root", last_seen_at: T0 + 11_000, plugin_headers_at: T0 + 11_000 });
  });

  it("a plugin process's link is written once in ten seconds, and at once when its state changes", async () => {
    const link = { instanceId: "inst-1", reportTo: "http://127.0.0.1:4870", state: "ok" as const };
    const links = () => store.db.prepare("SELECT report_state, last_at FROM plugin_links").all();
    await burst({ ...who, link }, T0, 40);
    expect(count(/^INSERT INTO plugin_links/)).toBe(1);
    expect(links()).toEqual([{ report_state: "ok", last_at: T0 + 19 }]);
    statements.length = 0;
    await burst({ ...who, link }, T0 + 1000, 20);
    expect(count(/^INSERT INTO plugin_links/)).toBe(0);
    await burst({ ...who, link: { ...link, state: "failing" } }, T0 + 2000, 1);
    expect(links()).toEqual([{ report_state: "failing", last_at: T0 + 2000 }]);
    await burst({ ...who, link: { ...link, state: "failing" } }, T0 + 12_000, 1);
    expect(links()).toEqual([{ report_state: "failing", last_at: T0 + 12_000 }]);
  });

  it("an identity that changes is learnt again, and the database follows the tree the gate decided on", async () => {
    await burst(who, T0, 5);
    statements.length = 0;
    await burst({ ...who, parent: "other" }, T0 + 10, 5);
    expect(count(/^UPDATE sessions SET parent_id/)).toBe(1);
    expect(row()).toMatchObject({ root_id: "other" });
    expect(store.peek({ ...who, parent: null }).rootId).toBe("other");
  });

  it("a full batch is written after this turn of the event loop, without waiting out the gap", async () => {
    // A queue whose gap (a minute) cannot pass during the test: only a full batch goes early.
    const queue = new WriteQueue(store.sql, { gapMs: 60_000 });
    const writes = new GateWrites(queue);
    const turn = () => new Promise((r) => setImmediate(r));
    const record = (i: number) => writes.record(served("m", "w", T0 + i, "root"));
    record(0);
    await turn();
    expect(count(/^INSERT INTO requests/)).toBe(1); // quiet: at once
    for (let i = 1; i < 32; i++) record(i);
    await turn();
    await turn();
    expect(count(/^INSERT INTO requests/)).toBe(1); // 31 wait for the gap
    record(32);
    await turn();
    await turn();
    expect(count(/^INSERT INTO requests/)).toBe(33);
    expect(count(/^BEGIN/)).toBe(2);
    await queue.close();
  });

  it("after a full queue dropped a batch, the next requests start a new one and teach their identity again", async () => {
    await store.close();
    store = await openSqliteStore(join(dir, "s.db"), { busyTimeoutMs: 10 });
    const queue = new WriteQueue(store.sql, { max: 1, retryMs: 60_000 });
    const writes = new GateWrites(queue);
    const other = new Database(join(dir, "s.db"));
    other.prepare("BEGIN IMMEDIATE").run();
    const request = async (at: number) => {
      writes.learn(who, "w", at);
      writes.record(served("m", "w", at, "root"));
      await queue.flush();
    };
    await request(T0); // locked: the batch waits in the queue
    await queue.run("counter", (q) => q.run("SELECT 1").then(() => {})); // the queue holds one: the batch is dropped
    expect(queue.stats.dropped).toBe(1);
    other.prepare("COMMIT").run();
    other.close();
    await request(T0 + 2);
    await queue.drain();
    await queue.flush();
    expect(store.db.prepare("SELECT session_id, parent_id FROM sessions").all()).toEqual([
      { session_id: "w", parent_id: "root" },
    ]);
    expect(store.db.prepare("SELECT started_at FROM requests").all()).toEqual([{ started_at: T0 + 2 }]);
    await queue.close();
  });

  it("a batch written again (its commit went through, the answer was lost) adds nothing", async () => {
    const statementsBefore = statements.length;
    const batch = () => {
      const b = emptyGateBatch();
      b.identities.set("k", { identity: who, sessionId: "w", key: "k", at: T0 });
      b.records.push(served("m", "w", T0, "root"), { ...served("m", "w", T0 + 1, "root"), refused: true });
      b.refusals.push({ sessionId: "w", scope: "session", refusedAt: T0 - 5, at: T0 + 1 });
      b.touches.set("w", T0 + 1);
      return b;
    };
    const drops: string[] = [];
    const write = (b: GateBatch) => {
      b.tries++; // as the write queue hands it over
      return store.sql.tx((q) => writeGateBatch(b, q, (label) => drops.push(label)));
    };
    const figures = () => ({
      requests: store.db.prepare("SELECT COUNT(*) AS n FROM requests").get(),
      refusals: store.db.prepare("SELECT value FROM counters WHERE name = 'refusals_total'").get(),
      refused: store.db.prepare("SELECT requests FROM refused_sessions WHERE session_id = 'w'").get(),
    });
    const one = batch();
    await write(one);
    expect(statements.slice(statementsBefore).filter((s) => s.startsWith("SELECT 1 AS one"))).toEqual([]);
    const once = figures();
    expect(once).toEqual({ requests: { n: 2 }, refusals: { value: 1 }, refused: { requests: 1 } });
    await write(one); // the write queue's retry of the same batch, after its commit
    expect(figures()).toEqual(once);
    await write(batch()); // another batch with the same content is written
    expect(figures()).toMatchObject({ requests: { n: 4 }, refusals: { value: 2 } });
    // A retry of a batch whose first try rolled back is written.
    const rolledBack = batch();
    rolledBack.tries = 1;
    rolledBack.records = [served("m", "w", T0 + 50, "root")];
    await write(rolledBack);
    expect(figures()).toMatchObject({ requests: { n: 5 } });
    expect(drops).toEqual([]);
  });

  it("a batch of requests from a client that sends no session, written again, adds nothing", async () => {
    const anon = (at: number, status = 200) => ({
      ...served("m", "x", at),
      session_id: null,
      root_id: null,
      status,
    });
    const batch = () => {
      const b = emptyGateBatch();
      b.records.push(anon(T0), { ...anon(T0 + 1), refused: true });
      return b;
    };
    const write = (b: GateBatch) => {
      b.tries++;
      return store.sql.tx((q) => writeGateBatch(b, q, () => {}));
    };
    const requests = () => store.db.prepare("SELECT COUNT(*) AS n FROM requests").get();
    const one = batch();
    await write(one);
    await write(one); // the retry after a commit whose answer was lost
    expect(requests()).toEqual({ n: 2 });
    // A retry whose first try rolled back: its own record is not there yet, though one like it is.
    for (const [other, model] of [
      [anon(T0, 500), "m"],
      [anon(T0), "n"],
      [{ ...anon(T0), client: "ck_other" }, "m"],
    ] as const) {
      const retried = emptyGateBatch();
      retried.tries = 1;
      retried.records.push({ ...other, model });
      await write(retried);
    }
    expect(requests()).toEqual({ n: 5 });
  });

  it.each([
    ["on the event loop", false],
    ["by the writer thread", true],
  ])(
    "a bad record is dropped, counted and logged once; the rest of its batch lands (%s)",
    async (_, writerThread) => {
      const logs: string[] = [];
      await store.close();
      store = await openSqliteStore(join(dir, "s.db"), { log: (l) => logs.push(l), writerThread });
      // The first is bad too: a batch's first item may be the one dropped.
      for (const started_at of [Number.NaN, T0, T0 + 1, Number.NaN, T0 + 2])
        store.recordRequest({ ...served("m", "w", T0, "root"), started_at });
      await store.flush();
      expect(store.db.prepare("SELECT COUNT(*) AS n FROM requests").get()).toEqual({ n: 3 });
      expect(store.writes.stats.failed).toBe(2);
      expect(logs.filter((l) => l.includes("request record failed (SQLITE_CONSTRAINT"))).toHaveLength(1);
      expect(store.writes.failing).toBeNull();
    },
  );
});
