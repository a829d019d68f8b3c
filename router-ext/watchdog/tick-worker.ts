// The watchdog's own thread for serve's in-process loop: it runs whole ticks
// (read opencode's database, judge the trees, report to the router over HTTP,
// save the state), so reading and judging a tree of 20,000 calls (about 0.8 s
// here: bench/watchdog-tick-block.ts) never holds the event loop that serves /v1. A tick is the same function the CLI
// runs (tick.ts); its log lines come back as messages. Started by
// router-ext/watchdog/tick-thread.ts; bundled as dist/watchdog-tick-worker.mjs.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { runWatchdogTick, type WatchdogTickOptions, type WatchdogTickResult } from "./tick.ts";

export const TICK_ROLE = "stallguard watchdog tick";

/** What the thread is started with (structured clone: plain data). */
export interface TickData {
  role: typeof TICK_ROLE;
}

/** A tick's options as they cross to the thread: plain data, no functions (the log comes back as messages). */
export type ThreadTickOptions = Omit<WatchdogTickOptions, "log" | "fetchImpl" | "now"> & { now?: number };

/** From the main thread: run one tick. */
export interface TickRequest {
  id: number;
  options: ThreadTickOptions;
}

/** To the main thread: started, then each tick's log lines and its result (or why it failed). */
export type TickMessage =
  | { type: "ready" }
  | { type: "log"; id: number; line: string }
  | { type: "done"; id: number; result: WatchdogTickResult }
  | { type: "failed"; id: number; message: string };

/** Runs each request's tick, answering through `post`. */
export function serveTicks(post: (m: TickMessage) => void) {
  return async (r: TickRequest): Promise<void> => {
    try {
      const log = (line: string) => post({ type: "log", id: r.id, line });
      post({ type: "done", id: r.id, result: await runWatchdogTick({ ...r.options, log }) });
    } catch (err) {
      post({ type: "failed", id: r.id, message: String((err as Error)?.stack ?? err) });
    }
  };
}

if (!isMainThread && parentPort && (workerData as TickData | null)?.role === TICK_ROLE) {
  const port = parentPort;
  const serve = serveTicks((m) => port.postMessage(m));
  port.on("message", (r: TickRequest) => void serve(r));
  port.postMessage({ type: "ready" } satisfies TickMessage);
}
