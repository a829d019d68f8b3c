// Writes that must not freeze the server while another process holds the
// database's write lock. better-sqlite3 is synchronous: a write that waits on
// the lock blocks every request, /health included. So the busy timeout is
// short, and a write that still finds the lock held is queued here and
// retried on a timer; while the queue holds anything, new writes join it
// without trying (the lock is known to be held), so the event loop stays free.
// The queue is bounded (oldest dropped, counted) and reported on /metrics.
import { single } from "../prom-text.ts";

export interface WriteQueueStats {
  pending: number;
  busy: number;
  retried: number;
  dropped: number;
}

/** SQLITE_BUSY and its kin: another connection holds the lock. */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

export class WriteQueue {
  private readonly queue: Array<{ label: string; write: () => void }> = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  readonly stats: WriteQueueStats = { pending: 0, busy: 0, retried: 0, dropped: 0 };

  constructor(
    private readonly opts: {
      max?: number;
      retryMs?: number;
      log?: (line: string) => void;
    } = {},
  ) {}

  /** True while writes wait for the lock. */
  get blocked(): boolean {
    return this.queue.length > 0;
  }

  /**
   * Runs `write` now, or queues it when the lock is held. Returns true when it
   * ran now. Errors other than a held lock are thrown to the caller.
   */
  run(label: string, write: () => void): boolean {
    if (this.blocked) {
      this.enqueue(label, write);
      return false;
    }
    try {
      write();
      return true;
    } catch (err) {
      if (!isBusy(err)) throw err;
      this.stats.busy++;
      this.enqueue(label, write);
      return false;
    }
  }

  /** Retries what is queued now, oldest first, until the lock is still held. */
  drain(): void {
    while (this.queue.length > 0) {
      const head = this.queue[0] as { label: string; write: () => void };
      try {
        head.write();
        this.stats.retried++;
      } catch (err) {
        if (isBusy(err)) {
          this.stats.busy++;
          break;
        }
        this.opts.log?.(`store: queued ${head.label} failed: ${(err as Error).message}`);
      }
      this.queue.shift();
    }
    this.stats.pending = this.queue.length;
    if (this.queue.length > 0) this.arm();
  }

  /** Stops retrying; returns how many writes were still queued. */
  close(): number {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.queue.length;
  }

  render(): string[] {
    const counter = (name: string, help: string, value: number) => single(name, "counter", help, value);
    return [
      ...single(
        "stallguard_store_pending_writes",
        "gauge",
        "Writes waiting for the database's write lock.",
        this.queue.length,
      ),
      ...counter(
        "stallguard_store_busy_total",
        "Writes that found the write lock held by another process.",
        this.stats.busy,
      ),
      ...counter(
        "stallguard_store_retried_writes_total",
        "Queued writes done on a later try.",
        this.stats.retried,
      ),
      ...counter(
        "stallguard_store_dropped_writes_total",
        "Queued writes dropped because the queue was full.",
        this.stats.dropped,
      ),
    ];
  }

  private enqueue(label: string, write: () => void): void {
    this.queue.push({ label, write });
    while (this.queue.length > (this.opts.max ?? 10_000)) {
      this.queue.shift();
      this.stats.dropped++;
    }
    this.stats.pending = this.queue.length;
    this.arm();
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.drain();
    }, this.opts.retryMs ?? 250);
    this.timer.unref?.();
  }
}
