// How calibrate --db splits its session trees over worker threads: a tree (a
// root and its descendants) is never split, since children roll up into their
// root; the trees go to the least loaded share, largest first, weighed by the
// rows a worker reads for them. Pure: the counts come from the caller.
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

export interface Share<T> {
  /** The share's trees, in the order of the serial run. */
  trees: T[][];
  rows: number;
}

/**
 * How many workers a run starts: at most `jobs`, one per tree at most, and
 * each with at least `minRows` rows; below 2 the run stays in the main thread.
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

/**
 * The trees in `n` shares of about equal rows (largest tree first to the
 * share with the fewest rows so far); each share keeps its trees in input
 * order, and empty shares are dropped.
 */
export function splitTrees<T>(
  trees: readonly T[][],
  weight: (tree: readonly T[]) => number,
  n: number,
): Share<T>[] {
  const shares = Array.from({ length: Math.max(1, n) }, () => ({ at: [] as number[], rows: 0 }));
  const order = trees.map((t, i) => ({ i, w: weight(t) })).sort((a, b) => b.w - a.w || a.i - b.i);
  for (const { i, w } of order) {
    let least = shares[0] as (typeof shares)[number];
    for (const s of shares) if (s.rows < least.rows) least = s;
    least.at.push(i);
    least.rows += w;
  }
  return shares
    .filter((s) => s.at.length > 0)
    .map((s) => ({ trees: s.at.sort((a, b) => a - b).map((i) => trees[i] as T[]), rows: s.rows }));
}
