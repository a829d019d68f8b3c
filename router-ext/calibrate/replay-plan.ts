// How calibrate --db spreads its session trees over threads: how many threads
// a run starts, and the order the trees are claimed in. A tree (a root and its
// descendants) is never split, since children roll up into their root. Each
// thread claims the next unclaimed tree when it is done with one (a shared
// counter, replay-worker.ts), largest first: a thread that starts late or
// runs slow (a worker starts cold and compiles the hot code again) simply
// claims fewer trees, and the small trees left at the end even out the
// threads' finish. Pure: the counts come from the caller.
import { availableParallelism } from "node:os";

/**
 * Rows (parts and messages) a worker must have to be worth starting. Measured
 * with the bundle on this repo's 2-core machine at load average 5 to 7,
 * --jobs 1 against 2 alternating: 2 workers lost at 6,700 rows each (3.45 s
 * against 2.88 s) and broke even at 13,500 (2.68 s against 2.76 s); a worker
 * costs about 0.1 s of CPU to start and compiles the hot code again.
 */
export const MIN_ROWS_PER_WORKER = 15_000;

/** At most this many workers by default, whatever the core count. */
export const MAX_DEFAULT_JOBS = 8;

/** The default --jobs: the cores node reports, at most MAX_DEFAULT_JOBS. */
export function defaultJobs(cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores, MAX_DEFAULT_JOBS));
}

/**
 * How many threads a run uses: at most `jobs`, one per tree at most, and
 * `minRows` rows for each; below 2 the run stays in the main thread.
 */
export function workerCount(
  jobs: number,
  trees: number,
  rows: number,
  minRows = MIN_ROWS_PER_WORKER,
): number {
  const byRows = Math.floor(rows / Math.max(1, minRows));
  return Math.max(1, Math.min(jobs, trees, byRows));
}

/** The trees in the order threads claim them: the most rows first, ties in input order. */
export function claimOrder<T>(trees: readonly T[][], weight: (tree: readonly T[]) => number): T[][] {
  return trees
    .map((tree, i) => ({ tree, i, w: weight(tree) }))
    .sort((a, b) => b.w - a.w || a.i - b.i)
    .map((t) => t.tree);
}
