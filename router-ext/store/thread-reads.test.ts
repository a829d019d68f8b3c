// The admin page's and the API's reads on serve's store (a real SQLite file
// and the real writer thread): the answers the main connection gives, none of
// the statements run on it, the event loop free while a heavy read runs, a
// read's error said, and a thread that dies mid-read hands the read back.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { served } from "../breaker/testing.ts";
import type { WriterThread } from "../db/writer-thread.ts";
import { openSqliteStore, type SqliteStore } from "./sqlite-store.ts";

const T0 = 1_800_000_000_000;
const view = { now: T0 + 60_000, liveWindowMs: 90_000 };
/** About 0.3 s of work in SQLite, in one statement. */
const HEAVY =
  "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) SELECT count(*) AS n FROM c";

describe("the admin page's reads under serve", () => {
  let dir: string;
  const stores: SqliteStore[] = [];
  const logs: string[] = [];
  /** Statements each store ran on its main connection. */
  const ran = new Map<SqliteStore, string[]>();
  const open = async (writerThread: boolean) => {
    const statements: string[] = [];
    const s = await openSqliteStore(join(dir, "s.db"), {
      writerThread,
      log: (l) => logs.push(l),
      verbose: (sql) => statements.push(String(sql)),
    });
    stores.push(s);
    ran.set(s, statements);
    return s;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sg-thread-reads-"));
    logs.length = 0;
  });
  afterEach(async () => {
    for (const s of stores.splice(0)) await s.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** 40 sessions (trees of 4) with 600 requests, two client keys. */
  const fill = async (store: SqliteStore) => {
    for (let s = 0; s < 40; s++)
      store.decide(
        { sessionId: `s${s}`, parent: s % 4 ? `s${s - (s % 4)}` : null, agent: "build", pluginVersion: null },
        T0,
      );
    for (let i = 0; i < 600; i++) {
      const s = i % 40;
      const r = served(s % 2 ? "a/m" : "b/m", `s${s}`, T0 + i, `s${s - (s % 4)}`);
      store.recordRequest({ ...r, cost_usd: 0.002, client: s % 3 ? "alice" : "ci" });
    }
    await store.flush();
  };
  const reads = (s: SqliteStore) =>
    Promise.all([
      s.sessionPage({ ...view, limit: 2000, offset: 0 }),
      s.sessionPage({ ...view, limit: 7, offset: 3 }),
      s.flaggedSessions({ ...view, limit: 50 }),
      s.sessionDetail("s4", { ...view, thresholds: {} }),
      s.sessionDetail("nope", { ...view, thresholds: {} }),
      s.clientUsage(T0 - 1),
      s.events(50),
      s.pluginLinks(0),
    ]);
  /** setImmediate turns while `work` runs: 0 when it holds the event loop throughout. */
  const turnsDuring = async (work: Promise<unknown>) => {
    let turns = 0;
    let done = false;
    const spin = () => {
      if (done) return;
      turns++;
      setImmediate(spin);
    };
    setImmediate(spin);
    await work;
    done = true;
    return turns;
  };

  it("answers as the main connection does, with none of the statements run on it", async () => {
    const here = await open(false);
    await fill(here);
    const expected = await reads(here);
    expect(expected[0].sessions).toHaveLength(40);
    expect(expected[5].map((c) => c.client).sort()).toEqual(["alice", "ci"]);
    const there = await open(true);
    const main = ran.get(there) as string[];
    main.length = 0;
    expect(await reads(there)).toEqual(expected);
    expect(main.filter((s) => /^\s*(SELECT|WITH)/.test(s))).toEqual([]);
    expect(logs).toEqual([]);
  });

  it("a heavy read leaves the event loop free on the thread; on the main connection it holds it", async () => {
    const there = await open(true);
    const here = await open(false);
    expect(await turnsDuring(there.reads.get(HEAVY))).toBeGreaterThan(10);
    expect(await turnsDuring(here.reads.get(HEAVY))).toBe(0);
    expect(await there.reads.get(HEAVY)).toEqual({ n: 2000000 });
  });

  it("a read that fails on the thread says why", async () => {
    const there = await open(true);
    await expect(there.reads.all("SELECT * FROM no_such_table")).rejects.toThrow(
      /no such table: no_such_table/,
    );
    // The thread still serves the next one.
    expect(await there.reads.get("SELECT 1 AS one")).toEqual({ one: 1 });
  });

  it("a thread that dies mid-read: the read runs here, and so do the reads after it", async () => {
    const there = await open(true);
    await fill(there);
    const thread = (there.writes as unknown as { opts: { offload: WriterThread } }).opts.offload;
    const reading = there.reads.get(HEAVY);
    await new Promise((r) => setTimeout(r, 50));
    await (thread as unknown as { worker: Worker }).worker.terminate();
    expect(await reading).toEqual({ n: 2000000 });
    expect(logs.filter((l) => l.includes("writer thread exited"))).toHaveLength(1);
    const main = ran.get(there) as string[];
    main.length = 0;
    const page = await there.sessionPage({ ...view, limit: 2000, offset: 0 });
    expect(page.sessions).toHaveLength(40);
    expect(main.some((s) => s.includes("FROM sessions s"))).toBe(true);
  });
});
