// Fire-and-forget delivery of /progress messages. enqueue() is synchronous and
// never throws; one request is in flight at a time, with a short timeout; a
// batch that fails for a reason a retry can fix stays queued and is retried
// with backoff. Batches are sized under the router's body limit (read from
// /health, lowered by a 413, which is split and retried, never dropped), and a
// big heartbeat goes out in pieces. The queue is bounded: the oldest messages
// go first, and only the newest heartbeat is ever kept.
import { type ProgressMessage, type ProgressResponse, progressResponseSchema } from "../shared/index.ts";
import { classifyStatus, type FetchLike, postProgress } from "../shared/progress-client.ts";
import { bodyBytes, fitHeartbeats, limitFrom, MAX_BATCH, takeBatch } from "./batch.ts";

export type { FetchLike };

/** What one send came to: delivered, or why not (for the plugin's one warning per failing stretch). */
export type Delivery = { ok: true; url: string } | { ok: false; url: string; reason: string };

export interface ReporterOptions {
  /** The router's base URL, or a function read before every POST (serve's router.json may change it); messages go to {url}/progress. */
  url: string | (() => string);
  /** The bearer token, or a function read before every POST (the plugin.token file may appear later). */
  token: string | null | (() => string | null);
  timeoutMs: number;
  queueSize: number;
  fetch?: FetchLike;
  /** First retry delay; doubles per failure up to maxRetryMs. */
  retryMs?: number;
  maxRetryMs?: number;
  /** At most this many messages per POST (the wire allows 100). */
  batchSize?: number;
  /** The router's body limit until /health or a 413 says otherwise. Default 65,536 (server.max_progress_bytes). */
  maxBytes?: number;
  log?: (level: "warn" | "error", code: string, message: string) => void;
  /** Called with every valid 2xx answer (its directives are the modes' work for this plugin). */
  onAnswer?: (answer: ProgressResponse) => void;
  /** Called after every send that was delivered or must be retried; must not throw. */
  onDelivery?: (d: Delivery) => void;
}

export interface ReporterStats {
  sent: number;
  batches: number;
  failures: number;
  dropped: number;
  rejected: number;
}

export type SendOutcome = "sent" | "retry" | "rejected" | "too_large";

/**
 * What the queue does with an answer (classes from shared/progress-client.ts):
 * retry what a later attempt can fix, a missing or wrong token included (the
 * token is read again for every send: serve writes plugin.token on its first
 * start, maybe after opencode did); a rejected body leaves the queue (logged),
 * since sending it again cannot change the answer.
 */
export function outcomeOf(status: number): SendOutcome {
  if (status === 413) return "too_large";
  if (status === 401 || status === 403) return "retry";
  const c = classifyStatus(status);
  return c === "refused" ? "rejected" : c;
}

export class Reporter {
  private queue: ProgressMessage[] = [];
  private inflight: Promise<void> | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private failuresInRow = 0;
  private closed = false;
  /** The router's body limit as last learnt, and the URL it was learnt from. */
  private limit: number;
  private limitKnown = false;
  private limitFrom = "";
  /** The URL of the last send (or the first resolution before any). */
  private lastUrl: string | null = null;
  /** After a 400 on a batch: smaller batches, so only the bad message is dropped. */
  private isolate: number | null = null;
  readonly stats: ReporterStats = { sent: 0, batches: 0, failures: 0, dropped: 0, rejected: 0 };
  /** Set after construction by the hook shell (directives); must not throw, is not awaited. */
  onAnswer: ((answer: ProgressResponse) => void) | null = null;

  constructor(private readonly opts: ReporterOptions) {
    this.limit = opts.maxBytes ?? 65_536;
  }

  /** The body limit batches are sized under (what /health or the last 413 said). */
  get maxBytes(): number {
    return this.limit;
  }

  get pending(): number {
    return this.queue.length;
  }

  /** The base URL reports go to: the last one used, else the one it would use now. */
  get target(): string {
    return this.lastUrl ?? this.base();
  }

  private base(): string {
    const u = this.opts.url;
    return (typeof u === "function" ? u() : u).replace(/\/+$/, "");
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
      if (this.stats.dropped++ % 100 === 0)
        this.opts.log?.(
          "warn",
          "progress_queue_full",
          `queue full (${this.opts.queueSize}): oldest report dropped`,
        );
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
    this.inflight = (async () => {
      const url = this.base();
      this.lastUrl = url;
      // Another router (serve restarted elsewhere) may have another body limit.
      if (!this.limitKnown || this.limitFrom !== url) await this.learnLimit(url);
      // Under the limit with a little room (a proxy may add nothing, but the limit may have just shrunk).
      const room = Math.floor(this.limit * 0.98);
      this.queue = fitHeartbeats(this.queue, room);
      const count = Math.min(this.isolate ?? MAX_BATCH, this.opts.batchSize ?? MAX_BATCH);
      const batch = takeBatch(this.queue, room, count);
      let outcome: SendOutcome;
      let reason = "";
      try {
        [outcome, reason] = await this.post(url, batch);
      } catch (err) {
        [outcome, reason] = ["retry", String(err)];
      }
      this.settle(batch, outcome);
      this.tell(outcome, url, reason);
    })().finally(() => {
      this.inflight = null;
    });
    return this.inflight;
  }

  /** Says what a send came to: delivered, or kept for a retry (and why). */
  private tell(outcome: SendOutcome, url: string, reason: string): void {
    if (outcome !== "sent" && outcome !== "retry") return;
    try {
      this.opts.onDelivery?.(outcome === "sent" ? { ok: true, url } : { ok: false, url, reason });
    } catch (err) {
      this.opts.log?.("warn", "delivery_hook_failed", String(err));
    }
  }

  /** The router's limit from GET /health (max_progress_bytes); kept as it is when the router does not say. */
  private async learnLimit(url: string): Promise<void> {
    try {
      const doFetch = this.opts.fetch ?? ((u: string, i: RequestInit) => fetch(u, i));
      const res = await doFetch(`${url}/health`, {
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      const limit = limitFrom(await res.text());
      if (limit !== null) this.limit = limit;
      this.limitKnown = true;
      this.limitFrom = url;
    } catch {
      // The router is down: the POST will say so too; ask again next time.
    }
  }

  private token(): string | null {
    const t = this.opts.token;
    return typeof t === "function" ? t() : t;
  }

  /** One POST: what to do with the batch, and why it was not delivered (for a retry). */
  private async post(url: string, batch: ProgressMessage[]): Promise<[SendOutcome, string]> {
    const r = await postProgress(url, batch.length === 1 ? (batch[0] as ProgressMessage) : batch, {
      token: this.token(),
      timeoutMs: this.opts.timeoutMs,
      ...(this.opts.fetch ? { fetch: this.opts.fetch } : {}),
    });
    if (r.http === null) return ["retry", `no answer: ${r.detail}`];
    const outcome = outcomeOf(r.http);
    if (r.http === 401 || r.http === 403) {
      this.opts.log?.(
        "warn",
        "progress_unauthorized",
        `router answered ${r.http} to /progress: reports kept until the plugin token matches (STALLGUARD_TOKEN or the plugin.token file serve writes)`,
      );
      return ["retry", `the router refused the plugin token (${r.http})`];
    }
    if (outcome === "too_large") return [this.tooLarge(batch, r.text), ""];
    if (outcome === "sent") this.answer(r.text);
    if (outcome === "rejected")
      this.opts.log?.("warn", "progress_rejected", `router answered ${r.http} to /progress`);
    return [outcome, `the router answered ${r.http}`];
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

  /**
   * A 413: learn the limit (from the answer, else half this body) and send the
   * same messages again in smaller pieces. Only a single message that cannot
   * be cut (a transition over the limit) is given up, and logged.
   */
  private tooLarge(batch: ProgressMessage[], text: string): SendOutcome {
    const size = bodyBytes(batch);
    const said = limitFrom(text);
    this.limit = Math.max(256, Math.min(said ?? Math.floor(size / 2), size - 1));
    this.limitKnown = true;
    const only = batch[0] as ProgressMessage;
    const splittable = batch.length > 1 || (only.type === "heartbeat" && only.sessions.length > 1);
    if (splittable) return "too_large";
    this.opts.log?.("error", "progress_too_large", `router refused a ${size} byte ${only.type} (413)`);
    return "rejected";
  }

  private settle(batch: ProgressMessage[], outcome: SendOutcome): void {
    if (outcome === "too_large") {
      // Nothing leaves the queue: the next batch is cut to the new limit, right away.
      this.schedule(0);
      return;
    }
    if (outcome === "rejected" && batch.length > 1) {
      // One bad message must not take the others with it: retry in halves down to the culprit.
      this.isolate = Math.max(1, Math.floor(batch.length / 2));
      this.schedule(0);
      return;
    }
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
      this.isolate = null;
    } else {
      this.stats.rejected += batch.length;
    }
    if (this.queue.length > 0) this.schedule(0);
  }
}
