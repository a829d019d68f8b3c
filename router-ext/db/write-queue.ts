// Writes that must not hold up the server, through the store's Sql. A write
// on a request's path would make the gate wait on the database (and on
// SQLite, whose driver is synchronous, block every request). So
// the gate's writes (what a request taught, its record) are deferred into a
// batch written in one transaction, never on a request's path: once the
// current turn of the event loop is done when the server is quiet, at most
// every `gapMs` when it is busy (a commit costs as much as dozens of rows,
// so a busy gate shares one among many requests), or sooner when its writer
// says it is full (hurry), so one commit never holds the loop for long; a
// write given as a job (the gate's batch) is done by a writer thread when the
// store has one (SQLite in serve: writer-thread.ts), off the loop. A
// batch that finds the database
// locked by another process, full, or read-only waits in a bounded queue
// (oldest dropped, counted) and is retried on a timer; while anything waits,
// new writes join it without trying, so the event loop stays free. A write
// that fails for any other reason is dropped, counted and logged once.
import { single } from "../prom-text.ts";
import type { Sql } from "../store/sql.ts";
import { isBusy, isUnavailable, sqliteCode } from "./unavailable.ts";

export interface WriteQueueStats {
  pending: number;
  busy: number;
  retried: number;
  dropped: number;
  failed: number;
}

/** One write, given the transaction (or connection) it runs on. */
export type WriteFn = (q: Sql) => Promise<void>;

/**
 * The same write as a value another connection can do (the writer thread):
 * its data, and what to do with what it reports once committed.
 */
export interface WriteJob {
  /** The data, taken when it is handed over (what comes later goes to a new write); the same on a retry. */
  take(): unknown;
  settle(out: unknown): void;
}

interface Write {
  label: string;
  write: WriteFn;
  job?: WriteJob;
}

/**
 * A connection of its own that writes jobs in one transaction each, off this
 * thread (router-ext/db/writer-thread.ts). tx resolves with each job's report
 * once committed, rejects with the database's error (its code kept), or
 * resolves null when it can no longer write (then the jobs run here).
 */
export interface WriteOffload {
  /** False once it can no longer write (never started, or died). */
  readonly writing: boolean;
  tx(jobs: unknown[]): Promise<unknown[] | null>;
  close(): Promise<void>;
}

/**
 * Least time between batches under load. A commit's fixed cost (BEGIN, the
 * WAL frames of every page it touched, COMMIT) is shared by the batch's rows:
 * in-process on SQLite (load average 7), 5 records a commit cost 33 us of CPU
 * a record, 10 cost 26 us, 32 cost 21 to 24 us, 64 cost 18 to 21 us. The
 * batch's writer caps its size (GateWrites), which bounds how long one commit
 * holds the loop.
 */
const GAP_MS = 50;

export interface WriteQueueOptions {
  /** Most writes kept waiting; the oldest go first. Default 10,000. */
  max?: number;
  /** Retry delay while the lock is held. Default 250 ms; doubled up to maxRetryMs while writes fail. */
  retryMs?: number;
  maxRetryMs?: number;
  /** Writes per transaction. Default 1000. */
  batchMax?: number;
  /** Where writes given as jobs are done (a writer thread); without it, on `sql` here. */
  offload?: WriteOffload;
  /** Least time between two batches while writes keep coming (unless one hurries). Default 50 ms. */
  gapMs?: number;
  log?: (line: string) => void;
}

export class WriteQueue {
  /** Deferred writes of this turn of the event loop. */
  private batch: Write[] = [];
  /** Writes that met a locked or failing database, oldest first. */
  private readonly queue: Write[] = [];
  private timer: ReturnType<typeof setTimeout> | null = null;
  private scheduled: { cancel(): void } | null = null;
  private lastBatchAt = Number.NEGATIVE_INFINITY;
  private failingCode: string | null = null;
  /** Batches being written now (a read waits for them, to see its own writes). */
  private readonly inflight = new Set<Promise<unknown>>();
  private draining: Promise<void> | null = null;
  private delay: number;
  private readonly loggedDrops = new Set<string>();
  readonly stats: WriteQueueStats = { pending: 0, busy: 0, retried: 0, dropped: 0, failed: 0 };

  constructor(
    private readonly sql: Sql,
    private readonly opts: WriteQueueOptions = {},
  ) {
    this.delay = opts.retryMs ?? 250;
  }

  /** True while writes wait for the database (or the waiting ones are being retried). */
  get blocked(): boolean {
    return this.queue.length > 0 || this.draining !== null;
  }

  /** The error code writes fail with now (full, read-only, I/O), null while they work or only wait on a lock. */
  get failing(): string | null {
    return this.failingCode;
  }

  /**
   * Runs `write` now, or queues it when the database is locked or failing.
   * Returns true when it ran now. Other errors are thrown to the caller.
   */
  async run(label: string, write: WriteFn): Promise<boolean> {
    await this.flush();
    if (this.blocked) {
      this.enqueue([{ label, write }]);
      return false;
    }
    try {
      await write(this.sql);
      this.noteSuccess();
      return true;
    } catch (err) {
      if (!isUnavailable(err)) throw err;
      this.noteFailure(err);
      this.enqueue([{ label, write }]);
      return false;
    }
  }

  /**
   * Adds `write` to the next batch: written after this turn of the event loop,
   * or `gapMs` after the last batch; by the writer thread when it has `job`.
   */
  defer(label: string, write: WriteFn, job?: WriteJob): void {
    this.batch.push(job ? { label, write, job } : { label, write });
    if (this.scheduled !== null) return;
    const wait = this.lastBatchAt + (this.opts.gapMs ?? GAP_MS) - performance.now();
    if (wait <= 0) this.hurry();
    else {
      const tm = setTimeout(() => void this.flush(), wait);
      this.scheduled = { cancel: () => clearTimeout(tm) };
    }
  }

  /** Writes the waiting batch after this turn of the event loop, without waiting out `gapMs` (it is full). */
  hurry(): void {
    if (this.batch.length === 0) return;
    this.scheduled?.cancel();
    const i = setImmediate(() => void this.flush());
    this.scheduled = { cancel: () => clearImmediate(i) };
  }

  /**
   * Writes the batch now and resolves once it and every batch before it is
   * written (a read calls this first, to see its own writes). Never rejects.
   */
  flush(): Promise<void> {
    this.scheduled?.cancel();
    this.scheduled = null;
    if (this.batch.length > 0) {
      this.lastBatchAt = performance.now();
      const writes = this.batch;
      this.batch = [];
      if (this.blocked) this.enqueue(writes);
      else {
        const p = this.write(writes, false).catch((err) => this.drop("batch", err));
        this.inflight.add(p);
        void p.finally(() => this.inflight.delete(p));
      }
    }
    return this.inflight.size === 0 ? Promise.resolve() : Promise.all(this.inflight).then(() => {});
  }

  /** Retries what waits, oldest first, until the database still refuses (one retry at a time). */
  drain(): Promise<void> {
    if (this.draining === null)
      this.draining = this.drainNow().finally(() => {
        this.draining = null;
      });
    return this.draining;
  }

  private async drainNow(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    while (this.queue.length > 0) {
      // Taken out while written: a write queued meanwhile goes behind them, and an overflow drops only older ones.
      const chunk = this.queue.splice(0, this.opts.batchMax ?? 1000);
      const done = await this.write(chunk, true);
      if (done < chunk.length) {
        this.queue.unshift(...chunk.slice(done));
        this.trim();
        break;
      }
    }
    this.stats.pending = this.queue.length;
    if (this.queue.length > 0) this.arm();
  }

  /** A write done elsewhere (storing a report) worked, or met an unavailable database. */
  noteSuccess(): void {
    if (this.failingCode === null) return;
    this.opts.log?.(`store: writes work again (${this.queue.length} still waiting)`);
    this.failingCode = null;
    this.delay = this.opts.retryMs ?? 250;
  }
  noteFailure(err: unknown): void {
    if (isBusy(err)) {
      this.stats.busy++;
      return;
    }
    const code = sqliteCode(err) || "error";
    if (this.failingCode === null)
      this.opts.log?.(`store: writes failing (${code}); the gate's writes wait and are retried`);
    this.failingCode = code;
  }

  /** Writes what it can, then stops retrying; returns how many writes were still waiting. */
  async close(): Promise<number> {
    await this.flush();
    await this.drain();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.opts.offload?.close();
    return this.queue.length;
  }

  render(): string[] {
    const counter = (name: string, help: string, value: number) => single(name, "counter", help, value);
    return [
      ...single(
        "stallguard_store_pending_writes",
        "gauge",
        "Writes waiting for the database (its write lock held elsewhere, or writes failing).",
        this.queue.length,
      ),
      ...single(
        "stallguard_store_writer_thread",
        "gauge",
        "1 while the gate's batches are written, and the admin page's reads run, by the writer thread (SQLite); 0 while on the event loop.",
        this.opts.offload?.writing ? 1 : 0,
      ),
      ...single(
        "stallguard_store_writes_failing",
        "gauge",
        "1 while the database refuses writes (full, read-only, I/O error).",
        this.failingCode === null ? 0 : 1,
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
      ...counter(
        "stallguard_store_failed_writes_total",
        "Writes dropped because they failed for a reason other than a locked or failing database.",
        this.stats.failed,
      ),
    ];
  }

  /**
   * Writes `writes` in one transaction; when one of them is bad, each alone so
   * only the bad one is dropped. Returns how many are done (written or
   * dropped); the rest met an unavailable database (queued when `queued` is false).
   */
  private async write(writes: Write[], queued: boolean): Promise<number> {
    try {
      await this.transaction(writes);
      this.settled(writes.length, queued);
      return writes.length;
    } catch (err) {
      if (isUnavailable(err)) return this.unavailable(err, writes, 0, queued);
    }
    for (let i = 0; i < writes.length; i++) {
      const w = writes[i] as Write;
      try {
        await this.transaction([w]);
        this.settled(1, queued);
      } catch (err) {
        if (isUnavailable(err)) return this.unavailable(err, writes, i, queued);
        this.drop(w.label, err);
      }
    }
    return writes.length;
  }

  /** One transaction of `writes`: on the writer thread when all are jobs and it still writes, else here. */
  private async transaction(writes: Write[]): Promise<void> {
    const offload = this.opts.offload;
    // Taken only when the thread writes: a take counts as a try (gate-batch.ts reads a retry's records first).
    const jobs = offload?.writing && writes.every((w) => w.job) ? writes.map((w) => w.job as WriteJob) : null;
    const outs = jobs && offload ? await offload.tx(jobs.map((j) => j.take())) : null;
    if (jobs && outs) {
      for (let i = 0; i < jobs.length; i++) jobs[i]?.settle(outs[i]);
      return;
    }
    return this.sql.tx(async (q) => {
      for (const w of writes) await w.write(q);
    });
  }

  private settled(n: number, queued: boolean): void {
    if (queued) this.stats.retried += n;
    this.noteSuccess();
  }

  private unavailable(err: unknown, writes: Write[], from: number, queued: boolean): number {
    this.noteFailure(err);
    if (this.failingCode !== null) this.delay = Math.min(this.delay * 2, this.opts.maxRetryMs ?? 5000);
    if (!queued) {
      this.enqueue(writes.slice(from));
      return writes.length;
    }
    this.arm();
    return from;
  }

  /** A write that failed for its own reason (not the database's state): counted, logged once per kind. */
  drop(label: string, err: unknown): void {
    this.stats.failed++;
    const code = sqliteCode(err) || (err as Error)?.name || "error";
    const key = `${label}\u0000${code}`;
    if (this.loggedDrops.has(key)) return;
    this.loggedDrops.add(key);
    this.opts.log?.(`store: ${label} failed (${code}): ${(err as Error)?.message ?? err}; dropped`);
  }

  private enqueue(writes: Write[]): void {
    this.queue.push(...writes);
    this.trim();
    this.stats.pending = this.queue.length;
    this.arm();
  }

  /** Drops the oldest waiting writes past the bound (counted). */
  private trim(): void {
    const max = this.opts.max ?? 10_000;
    if (this.queue.length <= max) return;
    this.stats.dropped += this.queue.length - max;
    this.queue.splice(0, this.queue.length - max);
  }

  private arm(): void {
    if (this.timer) return;
    this.timer = setTimeout(
      () => void this.drain(),
      this.failingCode === null ? (this.opts.retryMs ?? 250) : this.delay,
    );
    this.timer.unref?.();
  }
}
