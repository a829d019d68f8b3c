// calibrate --db across worker threads (--jobs N), on real SQLite files and
// real worker threads (from source: through tsx's loader): the output is the
// serial run's byte for byte, a small db stays in the main thread, and a
// worker that fails fails the run with the database named, every worker gone.
import { copyFileSync, mkdtempSync, readdirSync, rmSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { syntheticSessions, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { loadConfig } from "../../router-ext/calibrate/config.ts";
import { claimOrder, defaultJobs, workerCount } from "../../router-ext/calibrate/replay-plan.ts";
import { replayFileSerially } from "../../router-ext/calibrate/replay-serial.ts";
import { type ReplayWorkerData, runClaims, WORKER_ROLE } from "../../router-ext/calibrate/replay-worker.ts";
import { replayDb } from "../../router-ext/calibrate/replay-workers.ts";
import type { CalibrateOptions } from "../../router-ext/calibrate/run.ts";
import { loadOpencodeDb } from "../../router-ext/calibrate/sources.ts";
import { OpencodeDb } from "../../router-ext/opencode-db/reader.ts";
import { observeOptions, policyFromConfig, replay, treesOf } from "../../shared/index.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";
import { corruptToolPages, writeTreeDb } from "../helpers/tree-db.ts";

let tmp: string;
let dbPath: string;
let lastSession: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "stallguard-cal-workers-"));
  dbPath = join(tmp, "opencode.db");
  lastSession = writeTreeDb(dbPath, 3);
}, 60_000);
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const run = (opts: CalibrateOptions) => calibrateCaptured(opts, { now: 1_000_000_000_000 });
const threads = () => readdirSync("/proc/self/task").length;

/** The thread count once it stops falling (a terminated worker's thread ends shortly after). */
async function settledThreads(): Promise<number> {
  let n = threads();
  for (let i = 0; i < 40; i++) {
    await new Promise((r) => setTimeout(r, 50));
    const now = threads();
    if (now === n && i >= 4) return now;
    n = now;
  }
  return n;
}

type Doc = { sessions: Array<{ id: string; parent_id: string | null; worst: string; timeline: unknown[] }> };

describe("calibrate --db --jobs N", () => {
  test("--jobs 2 and 3 print exactly what --jobs 1 prints (--json --timeline, the table, --session)", async () => {
    const serial = await run({ db: dbPath, json: true, timeline: true, jobs: 1 });
    expect(serial.code, serial.err).toBe(0);
    expect(serial.err).not.toMatch(/worker thread/);
    const doc = JSON.parse(serial.out) as Doc;
    // Trees with children and grandchildren, loops flagged, timelines filled: a fair test.
    expect(doc.sessions.filter((s) => s.parent_id !== null).length).toBeGreaterThan(20);
    expect(doc.sessions.filter((s) => s.worst !== "ok").length).toBeGreaterThan(3);
    expect(doc.sessions.every((s) => s.timeline.length > 0)).toBe(true);
    for (const jobs of [2, 3]) {
      const par = await run({ db: dbPath, json: true, timeline: true, jobs });
      expect(par.code, par.err).toBe(0);
      expect(par.err).toContain(
        `across ${jobs} threads (--jobs ${jobs}: this one and ${jobs - 1} worker thread(s))`,
      );
      // Nobody wrote the file: no write is claimed (the workers' own reads commit nothing).
      expect(par.err).not.toMatch(/was written while it was read/);
      expect(par.out).toBe(serial.out);
    }
    const table = await run({ db: dbPath, jobs: 1 });
    const tablePar = await run({ db: dbPath, jobs: "2" });
    expect(tablePar.err).toContain("across 2 threads");
    expect(tablePar.out).toBe(table.out);
    // A root picked by --session brings its descendants, in either mode.
    const root = doc.sessions.find((s) => s.parent_id === null && s.id.endsWith("bench"))?.id as string;
    const one = await run({ db: dbPath, json: true, sessions: [root], jobs: 1 });
    const onePar = await run({ db: dbPath, json: true, sessions: [root], jobs: 2 });
    expect((JSON.parse(one.out) as Doc).sessions).toHaveLength(3);
    expect(onePar.out).toBe(one.out);
  }, 180_000);

  test("a small db stays in the main thread whatever --jobs says", async () => {
    const small = join(tmp, "small.db");
    writeOpencodeDb(small, syntheticSessions(3, 40, { loopEvery: 3 }));
    const r = await run({ db: small, json: true, jobs: 4 });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/read and replayed 120 tool call\(s\) in \d+ ms tree by tree in this thread/);
    expect(r.err).not.toMatch(/worker thread/);
  });

  test("a worker that fails fails the run: the database named, nothing printed, every worker gone", async () => {
    const broken = join(tmp, "broken.db");
    copyFileSync(dbPath, broken);
    expect(corruptToolPages(broken, lastSession)).toBeGreaterThan(0);
    const before = await settledThreads();
    const r = await run({ db: broken, json: true, jobs: 3 });
    expect(r.code).toBe(1);
    expect(r.out).toBe("");
    expect(r.err).toMatch(
      new RegExp(
        `--db \\(opencode's database.*\\): replay thread \\d of 3 failed reading ${broken}: .*malformed`,
      ),
    );
    expect(await settledThreads()).toBe(before);
    // The serial run fails on the same page, with the same exit code.
    const serial = await run({ db: broken, json: true, jobs: 1 });
    expect(serial.code).toBe(1);
    expect(serial.err).toMatch(/malformed/);
  }, 120_000);

  test("a database removed once the trees are split: every worker fails to open it, said", async () => {
    const gone = join(tmp, "gone.db");
    copyFileSync(dbPath, gone);
    const { config } = loadConfig({ env: {} });
    const result = replayDb(gone, {
      jobs: 2,
      timeline: false,
      config,
      onPlanned: () => unlinkSync(gone),
    });
    await expect(result).rejects.toThrow(
      new RegExp(
        `replay thread \\d of 2 failed reading ${gone}: cannot open ${gone} read-only: no such file`,
      ),
    );
  }, 60_000);

  test("a write during the run is said: the listing's sessions only, and how to get one snapshot", async () => {
    const live = join(tmp, "live.db");
    copyFileSync(dbPath, live);
    const { config } = loadConfig({ env: {} });
    const run = await replayDb(live, {
      jobs: 2,
      timeline: false,
      config,
      onPlanned: () => {
        const w = new Database(live);
        w.prepare(
          "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) VALUES ('ses_new', 'p', 's', '/d', 't', '1', 1, 1)",
        ).run();
        w.close();
      },
    });
    expect(run?.workers).toBe(2);
    expect(run?.results.some((x) => x.id === "ses_new")).toBe(false);
    expect(run?.warnings.join("\n")).toMatch(/was written while it was read: .* --copy reads one snapshot/);
    const copied = await replayDb(live, { jobs: 2, timeline: false, config, copy: true });
    expect(copied?.warnings).toEqual([]);
    expect(copied?.results.some((x) => x.id === "ses_new")).toBe(true);
  }, 60_000);

  test("--jobs takes a whole number from 1 to 64 (a usage error otherwise)", async () => {
    for (const bad of ["0", "two", "65", "1.5"]) {
      const r = await run({ db: dbPath, jobs: bad });
      expect(r.code).toBe(2);
      expect(r.err).toMatch(/--jobs: a whole number of threads from 1 to 64/);
    }
  });
});

describe("calibrate --db tree by tree in this thread", () => {
  const policy = () => policyFromConfig(loadConfig({ env: {} }).config);

  test("the verdicts are those of reading every session first and judging them after, in the listing's order", async () => {
    const p = policy();
    const whole = replay((await loadOpencodeDb(dbPath, { observe: observeOptions(p) })).sessions, p, {
      timeline: true,
    });
    const seen: number[] = [];
    const byTree = replayFileSerially(dbPath, {
      policy: p,
      timeline: true,
      onProgress: (d) => seen.push(d),
    });
    expect(whole.filter((x) => x.worst !== "ok").length).toBeGreaterThan(3);
    expect(JSON.stringify(byTree.results)).toBe(JSON.stringify(whole));
    expect(byTree.warnings).toEqual([]);
    // Progress after each session read, up to every session listed.
    expect(seen).toEqual(whole.map((_, i) => i + 1));
    // --session: the root and its descendants only, as the whole read gives them.
    const root = whole.find((x) => x.parent_id === null && x.id.endsWith("bench"))?.id as string;
    const one = replayFileSerially(dbPath, { policy: p, timeline: false, sessionIds: [root] });
    expect(one.results.map((x) => x.id)).toEqual(
      (await loadOpencodeDb(dbPath, { sessionIds: [root], observe: observeOptions(p) })).sessions.map(
        (s) => s.id,
      ),
    );
    expect(one.results).toHaveLength(3);
  });

  test("the listing and every read are one snapshot: a session emptied after the first tree is judged as it was", async () => {
    const live = join(tmp, "snapshot.db");
    copyFileSync(dbPath, live);
    const p = policy();
    const before = replayFileSerially(live, { policy: p, timeline: false });
    const last = before.results.at(-1) as (typeof before.results)[number];
    expect(last.calls).toBeGreaterThan(0);
    let wrote = 0;
    const during = replayFileSerially(live, {
      policy: p,
      timeline: false,
      onProgress: () => {
        if (wrote) return;
        const w = new Database(live);
        wrote = w.prepare("DELETE FROM part WHERE session_id = ?").run(last.id).changes;
        w.close();
      },
    });
    expect(wrote).toBeGreaterThan(0);
    expect(JSON.stringify(during.results)).toBe(JSON.stringify(before.results));
    // The next run reads the file as it is now.
    const after = replayFileSerially(live, { policy: p, timeline: false });
    expect(after.results.find((x) => x.id === last.id)?.calls).toBe(0);
  });
});

describe("spreading session trees over threads", () => {
  const tree = (name: string, size: number) => Array.from({ length: size }, (_, i) => `${name}${i}`);

  test("trees are claimed whole, the most rows first, ties in input order", () => {
    const trees = [tree("a", 2), tree("b", 5), tree("c", 1), tree("d", 5), tree("e", 3)];
    const order = claimOrder(trees, (t) => t.length);
    expect(order.map((t) => t[0])).toEqual(["b0", "d0", "e0", "a0", "c0"]);
    expect(order.every((t) => trees.includes(t))).toBe(true);
  });

  test("each tree is judged by the one thread that claims it: a thread that starts late gets what is left", () => {
    const { config } = loadConfig({ env: {} });
    const listed = OpencodeDb.open(dbPath);
    const sessions = listed.snapshot(() => listed.allSessions()).rows;
    listed.close();
    const trees = treesOf(sessions);
    const data = (next: SharedArrayBuffer): ReplayWorkerData => ({
      role: WORKER_ROLE,
      path: dbPath,
      config,
      timeline: false,
      trees,
      next,
    });
    const claim = (d: ReplayWorkerData) => {
      const out: string[] = [];
      runClaims(d, (m) => {
        if (m.type === "done") out.push(...m.results.map((r) => r.id));
      });
      return out;
    };
    const whole = claim(data(new SharedArrayBuffer(4)));
    expect(whole.sort()).toEqual(sessions.map((s) => s.id).sort());
    // Another thread took the first three trees before this one started.
    const shared = new SharedArrayBuffer(4);
    new Int32Array(shared)[0] = 3;
    const late = claim(data(shared));
    expect(late.sort()).toEqual(
      trees
        .slice(3)
        .flat()
        .map((s) => s.id)
        .sort(),
    );
    // The counter now says every tree is taken: a thread starting now judges none.
    expect(claim(data(shared))).toEqual([]);
  });

  test("workers: at most --jobs, one per tree, and enough rows each; the default is the cores, at most 8", () => {
    expect(workerCount(4, 10, 100_000, 10_000)).toBe(4);
    expect(workerCount(4, 2, 100_000, 10_000)).toBe(2);
    expect(workerCount(4, 10, 25_000, 10_000)).toBe(2);
    expect(workerCount(4, 10, 9_999, 10_000)).toBe(1);
    expect(defaultJobs(2)).toBe(2);
    expect(defaultJobs(32)).toBe(8);
  });
});
