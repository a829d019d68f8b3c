// Calls that repeat, in order and with the same answers, the calls one period
// before them, inside one stretch without a landed change. A call equal to an
// earlier one brings nothing new; a run of them at a fixed period is a loop
// whatever its shape. Three readings of the same runs, each with its own rule:
// - in a row (periods 1 and 2): the same call, or two calls in turn, again and
//   again with the same answers, counted in repeats;
// - a short cycle (periods 2 to 4), counted in whole turns: search -> usage
//   error -> search again -> same matches -> ...;
// - a retrace (periods 4 to 32): a sweep of different calls done again in the
//   same order (a dozen views re-read), counted in the different calls
//   repeated so far, so a long sweep is seen a few calls into its second pass
//   instead of after whole passes.
// Only exact repetition counts: every call must match the call one period
// before it, result included; a new call or a new answer ends the run.

/** The longest period tracked: a sweep of up to this many calls re-done in order is seen. */
export const MAX_TRACKED = 32;
/** The longest cycle: longer "cycles" are counted as retraces, by calls, not turns. */
export const MAX_PERIOD = 4;
/**
 * The shortest retrace period. Two or three calls in turn are the cycle
 * rule's (three different calls taken in turn three times is ordinary work
 * in the peers' own tests), and a shorter period cannot hold four different calls.
 */
export const MIN_RETRACE_PERIOD = 4;

export interface CycleInfo {
  /** Calls in one turn of the cycle (2 to MAX_PERIOD). */
  period: number;
  /** Whole turns of the cycle in a row, counting the first. */
  reps: number;
  /** One call of the cycle (the latest), for the report. */
  tool: string;
  target: string;
}

export interface RetraceInfo {
  /** Calls between a call and its earlier twin (MIN_RETRACE_PERIOD to MAX_TRACKED). */
  period: number;
  /** Calls in a row that repeat the call one period before, same answer. */
  calls: number;
  /** Different calls among them: what the rule counts. */
  distinct: number;
  /** The latest call, for the report. */
  tool: string;
  target: string;
}

export interface RowInfo {
  /** 1: the same call again; 2: two calls in turn. */
  period: 1 | 2;
  /** Calls in a row that repeat the call one period before, same answer (not counting the first). */
  repeats: number;
  /** The latest call, for the report. */
  tool: string;
  target: string;
}

export class CycleTracker {
  /**
   * The last MAX_TRACKED calls, a ring in three arrays (no object per call):
   * index (head - 1) mod N is the newest.
   */
  private readonly keys = new Array<string | undefined>(MAX_TRACKED);
  private readonly tools = new Array<string>(MAX_TRACKED).fill("");
  private readonly targets = new Array<string>(MAX_TRACKED).fill("");
  private head = 0;
  private size = 0;
  /** Per period p (index p): calls in a row that equal the call p before them. */
  private readonly matched = new Array<number>(MAX_TRACKED + 1).fill(0);

  /** One call of the current stretch; key is the call with its result. */
  push(key: string, tool: string, target: string): void {
    // walk the ring back from the newest call: p calls back is at idx
    let idx = this.head;
    for (let p = 1; p <= MAX_TRACKED; p++) {
      idx = idx === 0 ? MAX_TRACKED - 1 : idx - 1;
      const same = p <= this.size && this.keys[idx] === key;
      this.matched[p] = same ? (this.matched[p] ?? 0) + 1 : 0;
    }
    this.keys[this.head] = key;
    this.tools[this.head] = tool;
    this.targets[this.head] = target;
    this.head = (this.head + 1) % MAX_TRACKED;
    if (this.size < MAX_TRACKED) this.size++;
  }

  /** A landed change or a person's message: the stretch starts over. */
  reset(): void {
    this.keys.fill(undefined);
    this.head = 0;
    this.size = 0;
    this.matched.fill(0);
  }

  /** Where the call p calls back is (1: the newest), or -1. */
  private at(p: number): number {
    return p > this.size ? -1 : (this.head - p + MAX_TRACKED) % MAX_TRACKED;
  }

  /** The cycle with the most whole turns in a row ending at the latest call, or null. */
  current(): CycleInfo | null {
    let best: CycleInfo | null = null;
    const last = this.at(1);
    if (last < 0) return null;
    for (let p = 2; p <= MAX_PERIOD; p++) {
      const m = this.matched[p] ?? 0;
      // all different: the period is p, not a divisor of it
      if (m === 0 || this.distinct(p) !== p) continue;
      const reps = Math.floor((m + p) / p);
      if (reps >= 2 && (!best || reps > best.reps))
        best = { period: p, reps, tool: this.tools[last] as string, target: this.targets[last] as string };
    }
    return best;
  }

  /**
   * The same call, or two calls in turn, repeated in a row with the same
   * answers, ending at the latest call; null when the latest call repeats
   * neither of the two before it.
   */
  row(): RowInfo | null {
    const last = this.at(1);
    const one = this.matched[1] ?? 0;
    const two = this.matched[2] ?? 0;
    if (last < 0 || (one === 0 && two === 0)) return null;
    const tool = this.tools[last] as string;
    const target = this.targets[last] as string;
    // two calls in turn only when they differ: one call repeated also matches two back
    return two > one ? { period: 2, repeats: two, tool, target } : { period: 1, repeats: one, tool, target };
  }

  /**
   * The retrace with the most different calls repeated in order, ending at
   * the latest call, or null when none repeats two. Beyond one period the run
   * only repeats itself, so its different calls are those of its last
   * min(calls, period) calls. A run that a shorter period explains as well
   * (ABCABCABC also matches six back) is that period's: only periods whose
   * run is longer than every shorter period's count.
   */
  retrace(): RetraceInfo | null {
    // the periods with a run of their own, and the longest span any of them looks back
    let need = 0;
    let shorter = 0;
    for (let p = 1; p <= MAX_TRACKED; p++) {
      const m = this.matched[p] ?? 0;
      if (p >= MIN_RETRACE_PERIOD && m > shorter) need = Math.max(need, Math.min(m, p));
      shorter = Math.max(shorter, m);
    }
    if (need < 2) return null;
    // distinctUpTo[k]: different calls among the last k
    const seen = new Set<string>();
    const distinctUpTo = [0];
    for (let k = 1; k <= need; k++) {
      seen.add(this.keys[this.at(k)] as string);
      distinctUpTo.push(seen.size);
    }
    let best: RetraceInfo | null = null;
    const last = this.at(1);
    shorter = 0;
    for (let p = 1; p <= MAX_TRACKED; p++) {
      const calls = this.matched[p] ?? 0;
      if (p >= MIN_RETRACE_PERIOD && calls > shorter) {
        const distinct = distinctUpTo[Math.min(calls, p)] ?? 0;
        if (
          distinct >= 2 &&
          (!best || distinct > best.distinct || (distinct === best.distinct && calls > best.calls))
        )
          best = {
            period: p,
            calls,
            distinct,
            tool: this.tools[last] as string,
            target: this.targets[last] as string,
          };
      }
      shorter = Math.max(shorter, calls);
    }
    return best;
  }

  /** Different calls among the last k. */
  private distinct(k: number): number {
    const seen = new Set<string>();
    for (let i = 1; i <= k; i++) {
      const at = this.at(i);
      if (at < 0) break;
      seen.add(this.keys[at] as string);
    }
    return seen.size;
  }
}
