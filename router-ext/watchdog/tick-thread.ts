// The main thread's side of the watchdog's thread (tick-worker.ts): serve's
// loop hands it each tick and gets the result back, the tick's log lines
// written here as they come. A thread ends when no tick came for KEEP_MS. One
// that cannot start is said once, and ticks then run on this thread as
// before; one that dies fails its tick (the loop logs it and ticks again on
// time, on a new thread). Options that cannot cross a thread (an injected
// fetch or clock: tests) run the tick here.
import { Worker } from "node:worker_threads";
import { workerFile } from "../worker-file.ts";
import { runWatchdogTick, type WatchdogTickOptions, type WatchdogTickResult } from "./tick.ts";
import {
  type ThreadTickOptions,
  TICK_ROLE,
  type TickData,
  type TickMessage,
  type TickRequest,
} from "./tick-worker.ts";

/** Runs one tick: here (runWatchdogTick) or on the watchdog's thread. */
export type TickRunner = (opts: WatchdogTickOptions) => Promise<WatchdogTickResult>;

export interface TickThread {
  run: TickRunner;
  /** Whether the last tick ran on the thread (false before the first, or when it could not start). */
  readonly threaded: boolean;
  close(): Promise<void>;
}

const consoleLog = (line: string) => console.error(line);

/**
 * How long a thread waits for the next tick before it ends. At the default
 * 5-minute interval each tick starts its own (an empty tick on a new thread
 * took about 0.25 s here, off the gate's thread: bench/watchdog-tick-block.ts)
 * and no thread holds its memory (about 36 MB) between ticks; a shorter
 * interval keeps one.
 */
export const KEEP_MS = 60_000;

/** A started thread and the tick it runs (null while it waits for the next). */
interface Thread {
  w: Worker;
  tick: { log(line: string): void; resolve(r: WatchdogTickResult): void; reject(err: Error): void } | null;
  timer?: NodeJS.Timeout;
}

/** The watchdog's thread for serve's loop. `startThread` is how one starts (tests wrap it to reach it). */
export function tickThread(
  log: (line: string) => void,
  startThread: () => Promise<Worker> = startWorker,
  keepMs = KEEP_MS,
): TickThread {
  return new TickThreads(log, startThread, keepMs);
}

class TickThreads implements TickThread {
  private unavailable = false;
  private closed = false;
  private ranThere = false;
  /** The thread waiting for the next tick, if any. */
  private idle: Thread | null = null;
  private readonly threads = new Set<Thread>();

  constructor(
    private readonly log: (line: string) => void,
    private readonly startThread: () => Promise<Worker>,
    private readonly keepMs: number,
  ) {}

  get threaded(): boolean {
    return this.ranThere;
  }

  /** A tick on a thread (the waiting one, else a new one); here when it cannot go there. */
  readonly run: TickRunner = async (opts) => {
    const options = crossing(opts);
    if (this.closed || this.unavailable || !options) return this.here(opts);
    let t: Thread;
    try {
      t = await this.take();
    } catch (err) {
      this.unavailable = true;
      this.log(`watchdog: its thread did not start (${message(err)}); ticks run on the main thread`);
      return this.here(opts);
    }
    const result = new Promise<WatchdogTickResult>((resolve, reject) => {
      t.tick = { log: opts.log ?? consoleLog, resolve, reject };
    });
    try {
      t.w.postMessage({ id: 1, options } satisfies TickRequest);
    } catch (err) {
      // Options that do not clone (a value no tick option should hold): the tick still runs, here.
      t.tick = null;
      void this.end(t, "was not used");
      this.log(`watchdog: a tick could not go to its thread (${message(err)}); it runs here`);
      return this.here(opts);
    }
    this.ranThere = true;
    return result;
  };

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.threads].map((t) => this.end(t, "was stopped")));
  }

  private here(opts: WatchdogTickOptions): Promise<WatchdogTickResult> {
    this.ranThere = false;
    return runWatchdogTick(opts);
  }

  private take(): Promise<Thread> {
    const t = this.idle;
    if (!t) return this.open();
    this.idle = null;
    clearTimeout(t.timer);
    return Promise.resolve(t);
  }

  private async open(): Promise<Thread> {
    const w = await this.startThread();
    w.unref();
    const t: Thread = { w, tick: null };
    this.threads.add(t);
    w.on("message", (m: TickMessage) => {
      if (m.type === "log") t.tick?.log(m.line);
      else if (m.type === "done") this.settle(t, (k) => k.resolve(m.result));
      else if (m.type === "failed") this.settle(t, (k) => k.reject(new Error(m.message)));
    });
    w.on("error", (err) => void this.end(t, `failed (${message(err)})`));
    w.on("exit", (code) => void this.end(t, `exited (${code})`));
    return t;
  }

  /** `t`'s tick answered: it waits for the next one, keepMs at most. */
  private settle(t: Thread, answer: (tick: NonNullable<Thread["tick"]>) => void): void {
    const tick = t.tick;
    if (!tick) return;
    t.tick = null;
    answer(tick);
    if (this.idle) void this.end(this.idle, "was idle");
    this.idle = t;
    t.timer = setTimeout(() => void this.end(t, "was idle"), this.keepMs);
    t.timer.unref();
  }

  /** `t` ends (gone, stopped or idle too long): the tick it ran, if any, fails. */
  private end(t: Thread, how: string): Promise<number> {
    this.threads.delete(t);
    if (this.idle === t) this.idle = null;
    clearTimeout(t.timer);
    const tick = t.tick;
    t.tick = null;
    tick?.reject(new Error(`the watchdog thread ${how}`));
    return t.w.terminate();
  }
}

const message = (err: unknown) => String((err as Error)?.message ?? err);

/**
 * The tick's own options as plain data for the thread (a loop hands over its
 * options whole: its timer and callbacks stay here), or null when they carry
 * a function the thread cannot run.
 */
function crossing(opts: WatchdogTickOptions): ThreadTickOptions | null {
  if (opts.fetchImpl || typeof opts.now === "function") return null;
  return {
    config: opts.config,
    routerUrl: opts.routerUrl,
    statePath: opts.statePath,
    servers: opts.servers,
    fileServers: opts.fileServers,
    token: opts.token,
    lockPath: opts.lockPath,
    now: opts.now,
    env: opts.env ? { ...opts.env } : undefined,
    rcServersPath: opts.rcServersPath,
    opencodeDbPath: opts.opencodeDbPath,
    blindAfter: opts.blindAfter,
  };
}

/** The bundled tick-worker.ts, once it said it is ready. */
export async function startWorker(): Promise<Worker> {
  const file = await workerFile("watchdog-tick-worker");
  const data: TickData = { role: TICK_ROLE };
  const w = new Worker(file.url, { workerData: data, execArgv: file.execArgv });
  const first = await new Promise<TickMessage>((resolve, reject) => {
    w.once("message", resolve);
    w.once("error", reject);
    w.once("exit", (code) => reject(new Error(`exited (${code}) before it was ready`)));
  });
  if (first.type !== "ready") {
    await w.terminate();
    throw new Error("no ready message");
  }
  return w;
}
