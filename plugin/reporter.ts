// Fire-and-forget delivery of /progress messages. enqueue() is synchronous and
// never throws; one request is in flight at a time, with a short timeout; a
// batch that fails for a reason a retry can fix stays queued and is retried
// with backoff. The queue is bounded: the oldest messages go first, and only
// the newest heartbeat is ever kept.
import { type ProgressMessage, type ProgressResponse, progressResponseSchema } from "../shared/index.ts";
import { classifyStatus, type FetchLike, postProgress } from "../shared/progress-client.ts";

export type { FetchLike };

export interface ReporterOptions {
  /** The router's base URL; messages go to {url}/progress. */
  url: string;
  token: string | null;
  timeoutMs: number;
  queueSize: number;
  fetch?: FetchLike;
  /** First retry delay; doubles per failure up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  /** At most this many messages per POST (the wire allows 100). */
  batchSize?: number;
  log?: (level: "warn" | "error", code: string, message: string) => void;
  /** Called with every valid 2xx answer (its directives are the modes' work for this plugin). */
  onAnswer?: (answer: ProgressResponse) => void;
}

export interface ReporterStats {
  sent: number;
  batches: number;
  failures: number;
  dropped: number;
  rejected: number;
}

export type SendOutcome = "sent" | "retry" | "rejected";

/**
 * What the queue does with an answer (classes from shared/progress-client.ts):
 * retry what a later attempt can fix; a refused or rejected batch leaves the
 * queue (logged), since nothing inside opencode can fix a token or a body.
 */
export function outcomeOf(status: number): SendOutcome {
  const c = classifyStatus(status);
  return c === "refused" ? "rejected" : c;
}

export class Reporter {
  private queue: ProgressMessage[] = [];
  private inflight: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private failuresInRow = 0;
  private closed = false;
  readonly stats: ReporterStats = { sent: 0, batches: 0, failures: 0, dropped: 0, rejected: 0 };
  /** Set after construction by the hook shell (directives); must not throw, is not awaited. */
  onAnswer: ((answer: ProgressResponse) => void) | null = null;

  constructor(private readonly opts: ReporterOptions) {}

  get pending(): number {
    return this.queue.length;
  }

  /** Queues a message and schedules a send. Never awaits, never throws. */
  enqueue(msg: ProgressMessage): void {
    if (this.closed) return;
    if (msg.type === "heartbeat") this.queue = this.queue.filter((m) => m.type !== "heartbeat");
    this.queue.push(msg);
    while (this.queue.length > this.opts.queueSize) {
      // Drop the oldest heartbeat first, then the oldest message.
      const hb = this.queue.findIndex((m) => m.type === "heartbeat");
      this.queue.splice(hb >= 0 && hb < this.queue.length - 1 ? hb : 0, 1);
      this.stats.dropped++;
    }
    if (this.failuresInRow === 0) this.schedule(0);
  }

  /** Sends what is queued now (for dispose and tests); resolves when the queue is empty or a send failed. */
  async flush(): Promise<void> {
    if (this.inflight) await this.inflight;
    while (this.queue.length > 0) {
      const before = this.stats.failures;
      await this.sendBatch();
      if (this.stats.failures !== before) return;
    }
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(delay: number): void {
    if (this.timer || this.closed) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.sendBatch();
    }, delay);
    (this.timer as { unref?: () => void }).unref?.();
  }

  private sendBatch(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (this.queue.length === 0) return Promise.resolve();
    const batch = this.queue.slice(0, this.opts.batchSize ?? 100);
    this.inflight = this.post(batch)
      .then((outcome) => this.settle(batch, outcome))
      .catch(() => this.settle(batch, "retry"))
      .finally(() => {
        this.inflight = null;
      });
    return this.inflight;
  }

  private async post(batch: ProgressMessage[]): Promise<SendOutcome> {
    const r = await postProgress(this.opts.url, batch.length === 1 ? (batch[0] as ProgressMessage) : batch, {
      token: this.opts.token,
      timeoutMs: this.opts.timeoutMs,
      ...(this.opts.fetch ? { fetch: this.opts.fetch } : {}),
    });
    if (r.http === null) return "retry";
    const outcome = outcomeOf(r.http);
    if (outcome === "sent") this.answer(r.text);
    if (outcome === "rejected")
      this.opts.log?.("warn", "progress_rejected", `router answered ${r.http} to /progress`);
    return outcome;
  }

  private answer(text: string): void {
    const handler = this.onAnswer ?? this.opts.onAnswer;
    if (!handler || text === "") return;
    try {
      const parsed = progressResponseSchema.safeParse(JSON.parse(text));
      if (parsed.success) handler(parsed.data);
      else this.opts.log?.("warn", "progress_answer_invalid", "router answer did not match the wire schema");
    } catch (err) {
      this.opts.log?.("warn", "progress_answer_failed", String(err));
    }
  }

  private settle(batch: ProgressMessage[], outcome: SendOutcome): void {
    if (outcome === "retry") {
      this.stats.failures++;
      this.failuresInRow++;
      const base = this.opts.retryMs ?? 1000;
      const delay = Math.min(this.opts.maxRetryMs ?? 10_000, base * 2 ** (this.failuresInRow - 1));
      this.schedule(delay);
      return;
    }
    // Sent or rejected for good: either way these messages leave the queue.
    const sent = new Set(batch);
    this.queue = this.queue.filter((m) => !sent.has(m));
    this.failuresInRow = 0;
    if (outcome === "sent") {
      this.stats.sent += batch.length;
      this.stats.batches++;
    } else {
      this.stats.rejected += batch.length;
    }
    if (this.queue.length > 0) this.schedule(0);
  }
}
