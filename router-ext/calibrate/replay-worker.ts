// One replay thread of calibrate --db --jobs N: opens opencode.db read-only
// itself and, in one read transaction, claims the run's session trees one at
// a time from a counter every thread shares (replay-plan.ts says the order),
// reads and judges each before claiming the next (so one tree's observations
// are held at a time), and sends back only what calibrate prints: the
// verdicts (with timelines when asked), never content. Started by
// router-ext/calibrate/replay-workers.ts; bundled as dist/calibrate-replay-worker.mjs.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { type Config, policyFromConfig, type ReplayResult } from "../../shared/index.ts";
import { OpencodeDb } from "../opencode-db/reader.ts";
import { judgeTrees, type SessionListing } from "./db-read.ts";

export const WORKER_ROLE = "stallguard calibrate replay worker";

/** What a worker is started with (structured clone: plain data). */
export interface ReplayWorkerData {
  role: typeof WORKER_ROLE;
  path: string;
  /** The loaded config: the worker makes the same policy from it. */
  config: Config;
  timeline: boolean;
  /** Every tree of the run, each a root and its descendants, in the order they are claimed. */
  trees: SessionListing[][];
  /** The index of the next tree to claim (an Int32 every thread of the run shares). */
  next: SharedArrayBuffer;
}

/** What a worker sends: sessions read so far, then its results or why it failed, once. */
export type ReplayWorkerMessage =
  | { type: "progress"; sessions: number }
  | { type: "done"; results: ReplayResult[]; malformed: number }
  | { type: "failed"; message: string };

const PROGRESS_EVERY_MS = 100;

/** Claims, reads and judges trees till none is left; `post` receives the progress and the results. */
export function runClaims(data: ReplayWorkerData, post: (m: ReplayWorkerMessage) => void): void {
  const policy = policyFromConfig(data.config);
  const reader = OpencodeDb.open(data.path);
  try {
    const next = new Int32Array(data.next);
    let said = Date.now();
    const done = reader.snapshot(() =>
      judgeTrees(
        reader,
        data.trees,
        () => Atomics.add(next, 0, 1),
        { policy, timeline: data.timeline },
        (sessions) => {
          if (Date.now() - said < PROGRESS_EVERY_MS) return;
          said = Date.now();
          post({ type: "progress", sessions });
        },
      ),
    );
    post({ type: "done", ...done });
  } finally {
    reader.close();
  }
}

// Started as a worker. A failure is sent as a message: an error thrown out of
// a worker reaches the main thread cloned, and a driver's error class (better-
// sqlite3's SqliteError) arrives without its message.
if (!isMainThread && parentPort && (workerData as ReplayWorkerData | null)?.role === WORKER_ROLE) {
  const port = parentPort;
  try {
    runClaims(workerData as ReplayWorkerData, (m) => port.postMessage(m));
  } catch (err) {
    port.postMessage({ type: "failed", message: String((err as Error)?.message ?? err) });
    process.exitCode = 1;
  }
}
