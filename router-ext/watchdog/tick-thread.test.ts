// serve's watchdog thread (tick-thread.ts, tick-worker.ts): the real worker,
// bundled as stallguard ships it, ticking on a real opencode.db and posting to
// a router on loopback (a plain node:http listener that records the bodies:
// what the router does with them is tick-db.test.ts's). A tick on the thread
// reports what the same tick here reports; its log lines come back; a thread
// that dies fails only its tick, one that cannot start leaves ticks here.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ExportDoc, syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { parseConfig } from "../../shared/index.ts";
import { startWatchdogLoop } from "./loop.ts";
import { runWatchdogTick, type WatchdogTickOptions, type WatchdogTickResult } from "./tick.ts";
import { startWorker, type TickThread, tickThread } from "./tick-thread.ts";

const T = 1_800_000_000_000;

/** A session of 20 identical reads (looping), last updated at `updated`. */
function looping(index: number, updated: number): ExportDoc {
  const doc = syntheticSession(index, 20, { loopEvery: 1 });
  return { ...doc, info: { ...doc.info, time: { created: updated - 30_000, updated } } };
}

describe("the watchdog's thread", () => {
  let tmp: string;
  let router: Server;
  let routerUrl: string;
  const bodies: unknown[] = [];
  /** While set, the router holds each answer until it is called. */
  let hold: Promise<void> | null = null;
  let n = 0;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-thread-"));
    router = createServer((req, res) => {
      let text = "";
      req.on("data", (c) => (text += c));
      req.on("end", async () => {
        bodies.push(JSON.parse(text));
        await hold;
        res.writeHead(200, { "content-type": "application/json" }).end('{"accepted":1,"duplicates":0}');
      });
    });
    await new Promise<void>((r) => router.listen(0, "127.0.0.1", r));
    routerUrl = `http://127.0.0.1:${(router.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    router?.closeAllConnections();
    await new Promise((r) => router?.close(r));
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const config = () => {
    const r = parseConfig([{ source: "t", value: { watchdog: { timeout: "2s", lookback: "1h" } } }]);
    if (!r.ok) throw new Error(JSON.stringify(r.issues));
    return r.config;
  };
  /** A tick's options on a fresh opencode home holding a looping session and a healthy one. */
  const options = (logs: string[], over: Partial<WatchdogTickOptions> = {}): WatchdogTickOptions => {
    const home = join(tmp, `home${++n}`);
    mkdirSync(join(home, ".local", "share", "opencode"), { recursive: true });
    writeOpencodeDb(join(home, ".local", "share", "opencode", "opencode.db"), [
      looping(1, T + 60_000),
      syntheticSession(2, 12),
    ]);
    return {
      config: config(),
      routerUrl,
      token: "plugin-token",
      statePath: join(home, "state", "watchdog.json"),
      now: T + 120_000,
      env: { HOME: home },
      log: (l) => logs.push(l),
      ...over,
    };
  };
  const progress = (b: unknown) => (b as Array<{ type?: string; session_id?: string }>)[0];
  /** A tick on `thread` caught mid-report: the router holds its answer until release(). */
  const heldTick = async (thread: TickThread) => {
    let release = () => undefined as void;
    hold = new Promise((r) => (release = r));
    const before = bodies.length;
    const tick = thread.run(options([]));
    try {
      await expect.poll(() => bodies.length, { timeout: 20_000 }).toBe(before + 1);
    } catch (err) {
      release();
      hold = null;
      throw err;
    }
    return { tick, release };
  };
  /** A tick thread whose started workers the test can reach (and kill). */
  const watched = (keepMs?: number) => {
    const workers: Worker[] = [];
    const start = async () => {
      const w = await startWorker();
      workers.push(w);
      return w;
    };
    return { workers, thread: tickThread(() => undefined, start, keepMs) };
  };

  test("a tick on the thread reads, judges and reports what the same tick here does; its log lines come back", async () => {
    const { workers, thread } = watched(0);
    try {
      const there: string[] = [];
      const here: string[] = [];
      // A server named that does not answer: the tick logs it (blindAfter 1).
      const over = { servers: ["http://127.0.0.1:1"], blindAfter: 1 };
      const a = await thread.run(options(there, over));
      expect(thread.threaded).toBe(true);
      const b = await runWatchdogTick(options(here, over));
      expect(a).toMatchObject({ db: "read", sessions: 2, flagged: 1, router: "ok", skipped: false });
      expect(a.transitions.map((t) => [t.session_id, t.source, t.verdict])).toEqual([
        [syntheticSession(1, 1).info.id, "watchdog", "looping"],
      ]);
      expect(a).toEqual(b);
      expect(there).toEqual([
        "watchdog: warning: no opencode server answered for 1 ticks (1 known); opencode.db is read",
      ]);
      expect(there).toEqual(here);
      expect(bodies.slice(-2).map(progress)).toEqual([progress(bodies.at(-1)), progress(bodies.at(-1))]);
      // A thread with no tick for keepMs (here 0) ends: no memory held between ticks.
      expect(workers).toHaveLength(1);
      await expect.poll(() => workers[0]?.threadId).toBe(-1);
    } finally {
      await thread.close();
    }
  });

  test("serve's loop hands its ticks to the thread: its timer and callbacks stay here", async () => {
    const thread = tickThread(() => undefined);
    const results: WatchdogTickResult[] = [];
    const logs: string[] = [];
    let fire = () => undefined as void;
    const loop = startWatchdogLoop({
      ...options(logs),
      runTick: thread.run,
      onTick: (r) => results.push(r),
      schedule: (fn) => {
        fire = fn;
        return { cancel: () => undefined };
      },
      lead: (tick) => tick(),
    });
    try {
      fire();
      await expect.poll(() => results.length, { timeout: 20_000 }).toBe(1);
      expect(results[0]).toMatchObject({ db: "read", flagged: 1, router: "ok" });
      expect(thread.threaded).toBe(true);
      expect(logs).toEqual([]);
    } finally {
      await loop.stop();
      await thread.close();
    }
  });

  test("a tick that comes while the last one's thread waits runs on it; close() ends it", async () => {
    const { workers, thread } = watched(60_000);
    try {
      for (let i = 0; i < 3; i++) expect(await thread.run(options([]))).toMatchObject({ flagged: 1 });
      expect(workers).toHaveLength(1);
      expect(workers[0]?.threadId).toBeGreaterThan(0);
    } finally {
      await thread.close();
    }
    expect(workers[0]?.threadId).toBe(-1);
  });

  test("options that do not clone are said, and that tick runs here", async () => {
    const said: string[] = [];
    const thread = tickThread((l) => said.push(l));
    try {
      const opts = options([]);
      const odd = { ...opts, config: { ...opts.config, odd: () => 1 } } as WatchdogTickOptions;
      expect(await thread.run(odd)).toMatchObject({ db: "read", flagged: 1, router: "ok" });
      expect(thread.threaded).toBe(false);
      expect(said).toEqual([
        expect.stringMatching(
          /^watchdog: a tick could not go to its thread \(.*could not be cloned.*\); it runs here$/,
        ),
      ]);
      expect(await thread.run(options([]))).toMatchObject({ flagged: 1 });
      expect(thread.threaded).toBe(true);
    } finally {
      await thread.close();
    }
  });

  test("a thread that dies mid-tick fails that tick; the next tick starts another", async () => {
    const { workers, thread } = watched();
    const { tick, release } = await heldTick(thread);
    try {
      // The tick is posting its verdicts when its thread goes.
      await workers[0]?.terminate();
      await expect(tick).rejects.toThrow(/^the watchdog thread exited \(1\)$/);
      release();
      hold = null;
      const next = await thread.run(options([]));
      expect(next).toMatchObject({ db: "read", flagged: 1, router: "ok" });
      expect(workers).toHaveLength(2);
      expect(thread.threaded).toBe(true);
    } finally {
      release();
      hold = null;
      await thread.close();
    }
  });

  test("a thread that cannot start is said once; ticks then run here", async () => {
    const said: string[] = [];
    const thread: TickThread = tickThread(
      (l) => said.push(l),
      () => Promise.reject(new Error("no bundle")),
    );
    const first = await thread.run(options([]));
    const second = await thread.run(options([]));
    for (const r of [first, second]) expect(r).toMatchObject({ db: "read", flagged: 1, router: "ok" });
    expect(thread.threaded).toBe(false);
    expect(said).toEqual(["watchdog: its thread did not start (no bundle); ticks run on the main thread"]);
    await thread.close();
  });

  test("an injected fetch cannot cross to the thread: that tick runs here", async () => {
    const thread = tickThread(() => undefined);
    try {
      const urls: string[] = [];
      const r = await thread.run(
        options([], {
          fetchImpl: (url, init) => {
            urls.push(String(url));
            return fetch(url, init);
          },
        }),
      );
      expect(r).toMatchObject({ router: "ok", flagged: 1 });
      expect(thread.threaded).toBe(false);
      expect(urls).toEqual([`${routerUrl}/progress`]);
    } finally {
      await thread.close();
    }
  });

  test("close() fails the tick still running on the thread", async () => {
    const thread = tickThread(() => undefined);
    const { tick, release } = await heldTick(thread);
    try {
      const failed = expect(tick).rejects.toThrow(/^the watchdog thread was stopped$/);
      await thread.close();
      await failed;
    } finally {
      release();
      hold = null;
    }
  });
});
