// The delivery queue: one serial lane per channel (a hanging channel delays
// only itself, and a trigger is never overtaken by its resolve), a bound on
// everything queued, a timeout per attempt and exactly one retry.
import type { Alert, ChannelAdapter } from "./types.ts";

export interface AttemptOptions {
  timeoutMs: number;
  retryDelayMs: number;
  /** Aborts the attempt in flight and skips the retry (used on close). */
  signal?: AbortSignal;
}

export interface AttemptResult {
  ok: boolean;
  attempts: number;
  error: string | null;
}

function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.replace(/\s+/g, " ").slice(0, 300) || "unknown error";
}

async function once(adapter: ChannelAdapter, alert: Alert, timeoutMs: number, outer?: AbortSignal) {
  const ac = new AbortController();
  const onOuter = () => ac.abort();
  outer?.addEventListener("abort", onOuter, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      ac.abort();
      reject(new Error(`timed out after ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([adapter.deliver(alert, ac.signal), timeout]);
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener("abort", onOuter);
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** One delivery: a first attempt and, if it fails, exactly one retry. Never rejects. */
export async function deliverWithRetry(
  adapter: ChannelAdapter,
  alert: Alert,
  o: AttemptOptions,
): Promise<AttemptResult> {
  let error = "not attempted";
  for (let attempt = 1; attempt <= 2; attempt++) {
    if (o.signal?.aborted) return { ok: false, attempts: attempt - 1, error: "notifier closed" };
    try {
      await once(adapter, alert, o.timeoutMs, o.signal);
      return { ok: true, attempts: attempt, error: null };
    } catch (err) {
      error = o.signal?.aborted ? "notifier closed" : messageOf(err);
    }
    if (attempt === 1) await pause(o.retryDelayMs, o.signal);
  }
  return { ok: false, attempts: 2, error };
}

export interface QueuedJob {
  channel: string;
  adapter: ChannelAdapter;
  alert: Alert;
}

export interface DeliveryQueueOptions extends Omit<AttemptOptions, "signal"> {
  /** Most jobs queued or in flight, all channels together. */
  size: number;
  onResult(job: QueuedJob, result: AttemptResult): void;
}

export interface DeliveryQueue {
  /** false when the queue is full or closed (the job is not taken). */
  push(job: QueuedJob): boolean;
  pending(): number;
  idle(): Promise<void>;
  /** Waits up to graceMs for the queue to drain, then aborts what is left. */
  close(graceMs: number): Promise<void>;
}

export function createDeliveryQueue(o: DeliveryQueueOptions): DeliveryQueue {
  const lanes = new Map<string, QueuedJob[]>();
  const busy = new Set<string>();
  const abort = new AbortController();
  let count = 0;
  let closed = false;
  let waiters: Array<() => void> = [];

  const settle = () => {
    if (count > 0) return;
    const w = waiters;
    waiters = [];
    for (const f of w) f();
  };

  const runLane = async (channel: string) => {
    busy.add(channel);
    const lane = lanes.get(channel) ?? [];
    for (let job = lane.shift(); job; job = lane.shift()) {
      const result = await deliverWithRetry(job.adapter, job.alert, { ...o, signal: abort.signal });
      count--;
      try {
        o.onResult(job, result);
      } catch {
        // A broken result hook must not stop the lane; the record is lost, the lane goes on.
      }
    }
    busy.delete(channel);
    settle();
  };

  return {
    push(job) {
      if (closed || count >= o.size) return false;
      const lane = lanes.get(job.channel) ?? [];
      lanes.set(job.channel, lane);
      lane.push(job);
      count++;
      if (!busy.has(job.channel)) {
        busy.add(job.channel);
        setImmediate(() => void runLane(job.channel));
      }
      return true;
    },
    pending: () => count,
    idle() {
      return count === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve));
    },
    async close(graceMs) {
      closed = true;
      if (count > 0) {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([this.idle(), new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
        clearTimeout(timer);
      }
      abort.abort();
      await this.idle();
    },
  };
}
