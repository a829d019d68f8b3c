// A short cycle: the same two to four calls, each with the same result, over
// and over (search -> usage error -> search again -> same matches -> ...).
// The same-call count sees each member of such a cycle alone, so an
// alternation of two calls needs twice as many calls to reach top_warn as
// one call repeated; this tracks the cycle as a whole. Only exact repetition
// counts: the calls of one period must differ from each other (one call
// repeated is the same-call rule's) and every call must match the call one
// period before it, result included.

/** The longest period tracked: longer "cycles" are ordinary work revisiting a few files. */
export const MAX_PERIOD = 4;

export interface CycleInfo {
  /** Calls in one turn of the cycle (2 to MAX_PERIOD). */
  period: number;
  /** Whole turns of the cycle in a row, counting the first. */
  reps: number;
  /** One call of the cycle (the latest), for the report. */
  tool: string;
  target: string;
}

interface Entry {
  key: string;
  tool: string;
  target: string;
}

export class CycleTracker {
  /** The last MAX_PERIOD calls, newest last. */
  private recent: Entry[] = [];
  /** Per period p (index p): calls in a row that equal the call p before them. */
  private readonly matched = new Array<number>(MAX_PERIOD + 1).fill(0);

  /** One call of the current stretch; key is the call with its result. */
  push(key: string, tool: string, target: string): void {
    const n = this.recent.length;
    for (let p = 2; p <= MAX_PERIOD; p++) {
      this.matched[p] = n >= p && this.recent[n - p]?.key === key ? (this.matched[p] ?? 0) + 1 : 0;
    }
    this.recent.push({ key, tool, target });
    if (this.recent.length > MAX_PERIOD) this.recent.shift();
  }

  /** A landed change or a person's message: the stretch starts over. */
  reset(): void {
    this.recent = [];
    this.matched.fill(0);
  }

  /** The cycle with the most whole turns in a row ending at the latest call, or null. */
  current(): CycleInfo | null {
    let best: CycleInfo | null = null;
    const last = this.recent[this.recent.length - 1];
    if (!last) return null;
    for (let p = 2; p <= MAX_PERIOD; p++) {
      const m = this.matched[p] ?? 0;
      if (m === 0 || !this.distinctTail(p)) continue;
      const reps = Math.floor((m + p) / p);
      if (reps >= 2 && (!best || reps > best.reps))
        best = { period: p, reps, tool: last.tool, target: last.target };
    }
    return best;
  }

  /** True when the last p calls all differ (so the period is p, not a divisor of it). */
  private distinctTail(p: number): boolean {
    const tail = this.recent.slice(-p);
    return tail.length === p && new Set(tail.map((e) => e.key)).size === p;
  }
}
