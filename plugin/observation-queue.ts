// Observations reach the judge in the order the hooks saw them, even when one
// of them waits for something (a bash call's work-tree probe). An item that
// is ready runs at once when nothing waits ahead of it (the usual case: no
// promise, no tick); otherwise it queues behind the waiting one. A waiting
// item settles when its answer arrives or when its wait runs out (then with
// null), so one slow probe delays verdicts by at most waitMs and never the
// session itself. Replay sees the same observations in the same order, so
// the verdict sequence is the same on both paths.

/** Calls fn after ms; returns a cancel. Injected so tests drive time by hand. */
export type Timer = (ms: number, fn: () => void) => () => void;

export const realTimer: Timer = (ms, fn) => {
  const t = setTimeout(fn, ms);
  (t as { unref?: () => void }).unref?.();
  return () => clearTimeout(t);
};

interface Item {
  settled: boolean;
  run: () => void;
}

export interface ObservationQueueOptions {
  /** Longest time a waiting item holds the queue, from its arrival. */
  waitMs: number;
  timer?: Timer;
  /** A run that threw: logged by the caller; the queue goes on. */
  onError?: (err: unknown) => void;
}

export class ObservationQueue {
  private readonly items: Item[] = [];
  private readonly timer: Timer;
  private idle: Array<() => void> = [];
  private draining = false;

  constructor(private readonly opts: ObservationQueueOptions) {
    this.timer = opts.timer ?? realTimer;
  }

  /** Items not yet run (waiting ones and those behind them). */
  get length(): number {
    return this.items.length;
  }

  /** A ready item: runs now when nothing waits ahead of it. */
  push(run: () => void): void {
    if (this.items.length === 0) {
      this.safely(run);
      return;
    }
    this.items.push({ settled: true, run });
  }

  /**
   * An item that needs an answer first: use(answer) runs in arrival order once
   * the answer arrives, or use(null) when it fails or does not come in waitMs.
   */
  pushWaiting<T>(answer: Promise<T | null>, use: (answer: T | null) => void): void {
    let value: T | null = null;
    const item: Item = { settled: false, run: () => use(value) };
    this.items.push(item);
    const settle = (v: T | null) => {
      if (item.settled) return;
      value = v;
      item.settled = true;
      cancel();
      this.pump();
    };
    const cancel = this.timer(this.opts.waitMs, () => settle(null));
    answer.then(settle, () => settle(null));
  }

  /** Resolves once every item queued so far has run (dispose, tests). */
  drained(): Promise<void> {
    if (this.items.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idle.push(resolve));
  }

  private pump(): void {
    // A run may settle another item synchronously; one loop drains both.
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.items.length > 0 && (this.items[0] as Item).settled) {
        const item = this.items.shift() as Item;
        this.safely(item.run);
      }
    } finally {
      this.draining = false;
    }
    if (this.items.length === 0 && this.idle.length > 0) {
      const waiters = this.idle;
      this.idle = [];
      for (const w of waiters) w();
    }
  }

  private safely(run: () => void): void {
    try {
      run();
    } catch (err) {
      this.opts.onError?.(err);
    }
  }
}
