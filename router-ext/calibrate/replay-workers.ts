// calibrate --db across cores: the main thread lists the sessions (one cheap
// read), puts the session trees in the order they are claimed, starts the
// worker threads (router-ext/calibrate/replay-worker.ts) and works beside
// them; each thread opens the file read-only itself, claims the next tree
// from a counter they share till none is left, reads and judges it, and
// sends back only the verdicts. The main thread puts them in the serial run's
// order, so the output is byte-identical to --jobs 1. A thread that fails
// fails the run; every worker is stopped on error and at the end. With
// --jobs 1, or a database too small for workers, this thread reads and
// judges it alone (replay-serial.ts), on the same file or copy.
import { Worker } from "node:worker_threads";
import Database from "better-sqlite3";
import { type Config, policyFromConfig, type ReplayResult, treesOf } from "../../shared/index.ts";
import { OpencodeDb } from "../opencode-db/reader.ts";
import { type WorkerFile, workerFile } from "../worker-file.ts";
import { inListingOrder, malformedWarnings, type SessionListing } from "./db-read.ts";
import { claimOrder, workerCount } from "./replay-plan.ts";
import { replayFileSerially } from "./replay-serial.ts";
import { type ReplayWorkerData, type ReplayWorkerMessage, runClaims, WORKER_ROLE } from "./replay-worker.ts";
import { applyFilters, type Filters, onDbOrCopy } from "./sources.ts";

export interface WorkersOptions extends Filters {
  jobs: number;
  copy?: boolean;
  timeline: boolean;
  /** The loaded config: each worker makes the run's policy from it. */
  config: Config;
  /** Rows a worker must have to be started (replay-plan.ts MIN_ROWS_PER_WORKER). */
  minRows?: number;
  onProgress?: (done: number, total: number) => void;
  /** Called once the run is planned, before any worker starts. */
  onPlanned?: (plan: { workers: number; sessions: number; rows: number }) => void;
}

export interface WorkersRun {
  /** One per session listed, in the serial run's order. */
  results: ReplayResult[];
  warnings: string[];
  /** Threads that read and judged trees: this one and the workers. */
  workers: number;
}

interface Plan {
  chosen: SessionListing[];
  /** The chosen sessions' trees, in the order they are claimed. */
  trees: SessionListing[][];
  /** This one and the workers. */
  threads: number;
  rows: number;
  malformed: number;
}

/**
 * Reads and judges `path` across this thread and worker threads, or in this
 * thread alone when `jobs` is 1 or the database is too small to gain from
 * workers (`workers` says which).
 */
export async function replayDb(path: string, opts: WorkersOptions): Promise<WorkersRun> {
  return onDbOrCopy(path, opts.copy ?? false, async (p) => {
    if (opts.jobs < 2) return inThisThread(p, opts);
    // Opened first: its shape check says clearly why a file cannot be read.
    const reader = OpencodeDb.open(p);
    // Its own connection watches for writes (data_version) while the workers read.
    let watch: Database.Database | null = null;
    try {
      watch = new Database(p, { readonly: true, fileMustExist: true });
      const before = dataVersion(watch);
      const plan = planRun(reader, watch, opts);
      reader.close();
      if (!plan) return inThisThread(p, opts);
      opts.onPlanned?.({ workers: plan.threads, sessions: plan.chosen.length, rows: plan.rows });
      const file = await workerFile("calibrate-replay-worker");
      const done = await runWorkers(path, p, plan, opts, file);
      const run = inSerialOrder(plan, done, opts);
      if (!opts.copy && dataVersion(watch) !== before)
        run.warnings.push(
          `${path} was written while it was read: a session updated meanwhile may be judged at a newer state than the listing (a sub-agent session started meanwhile is left out); --copy reads one snapshot`,
        );
      return run;
    } finally {
      reader.close();
      watch?.close();
    }
  });
}

/** The listing and every read in one transaction, tree by tree, in this thread. */
function inThisThread(path: string, opts: WorkersOptions): WorkersRun {
  const policy = policyFromConfig(opts.config);
  return { ...replayFileSerially(path, { ...opts, policy }), workers: 1 };
}

/** Changes whenever another connection commits to the file. */
function dataVersion(db: Database.Database): number {
  return db.pragma("data_version", { simple: true }) as number;
}

/** The sessions chosen by the filters, in trees in the order they are claimed, and how many threads claim them. */
function planRun(reader: OpencodeDb, watch: Database.Database, opts: WorkersOptions): Plan | null {
  const listed = reader.snapshot(() => reader.allSessions());
  const chosen: SessionListing[] = applyFilters(listed.rows, opts);
  const counts = rowCounts(watch);
  const weight = (tree: readonly SessionListing[]) => tree.reduce((n, s) => n + (counts.get(s.id) ?? 0), 0);
  const trees = treesOf(chosen);
  const rows = weight(chosen);
  const n = workerCount(opts.jobs, trees.length, rows, opts.minRows);
  if (n < 2) return null;
  return { chosen, trees: claimOrder(trees, weight), threads: n, rows, malformed: listed.malformed };
}

/** Part and message rows per session: one indexed count per table. */
function rowCounts(db: Database.Database): Map<string, number> {
  const counts = new Map<string, number>();
  for (const table of ["part", "message"]) {
    const sql = `SELECT session_id, count(*) FROM ${table} GROUP BY session_id`;
    for (const [id, n] of db.prepare(sql).raw().iterate() as Iterable<[unknown, number]>)
      if (typeof id === "string") counts.set(id, (counts.get(id) ?? 0) + n);
  }
  return counts;
}

type Done = Extract<ReplayWorkerMessage, { type: "done" }>;

/**
 * Starts the workers, claims trees in this thread beside them, and waits for
 * every thread's results; the first failure stops them all. This thread
 * claims trees rather than waiting idle: one worker fewer to start and to
 * warm up, for the same cores.
 */
function runWorkers(
  name: string,
  path: string,
  plan: Plan,
  opts: WorkersOptions,
  file: WorkerFile,
): Promise<Done[]> {
  const n = plan.threads;
  const data: ReplayWorkerData = {
    role: WORKER_ROLE,
    path,
    config: opts.config,
    timeline: opts.timeline,
    trees: plan.trees,
    next: new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT),
  };
  // Started before this thread claims its first tree, so they read alongside it.
  const workers = Array.from(
    { length: n - 1 },
    () => new Worker(file.url, { workerData: data, execArgv: file.execArgv }),
  );
  const stopAll = () => Promise.all(workers.map((w) => w.terminate()));
  const done: Array<Done | undefined> = [];
  const read: number[] = Array.from({ length: n }, () => 0);
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (i: number, why: string) => {
      if (settled) return;
      settled = true;
      const error = new Error(`replay thread ${i + 1} of ${n} failed reading ${name}: ${why}`);
      void stopAll().then(
        () => reject(error),
        () => reject(error),
      );
    };
    const answer = (i: number, m: ReplayWorkerMessage) => {
      if (settled) return;
      if (m.type === "failed") return fail(i, m.message);
      if (m.type === "progress") {
        read[i] = m.sessions;
        opts.onProgress?.(
          read.reduce((a, b) => a + b, 0),
          plan.chosen.length,
        );
        return;
      }
      done[i] = m;
      if (done.filter(Boolean).length < n) return;
      settled = true;
      void stopAll().then(() => resolve(done as Done[]), reject);
    };
    workers.forEach((w, at) => {
      const i = at + 1;
      w.on("message", (m: ReplayWorkerMessage) => answer(i, m));
      w.on("error", (err) => fail(i, String((err as Error | undefined)?.message ?? err)));
      w.on("messageerror", (err) => fail(i, `unreadable message: ${err.message}`));
      w.on("exit", (code) => {
        if (!done[i]) fail(i, `its worker exited (code ${code}) before sending its results`);
      });
    });
    try {
      runClaims(data, (m) => answer(0, m));
    } catch (err) {
      fail(0, String((err as Error)?.message ?? err));
    }
  });
}

/** The threads' results in the order of the listing; a session left unanswered fails the run. */
function inSerialOrder(plan: Plan, done: Done[], opts: WorkersOptions): WorkersRun {
  const results = inListingOrder(
    plan.chosen,
    done.flatMap((d) => d.results),
  );
  const malformed = done.reduce((n, d) => n + d.malformed, plan.malformed);
  opts.onProgress?.(results.length, results.length);
  return { results, warnings: malformedWarnings(malformed), workers: plan.threads };
}
