// The current stretch's last N calls (the tracker's rolling window) with
// counts kept as calls come and go: per exact call, per normalized call, per
// call with its answer and per target, the failure streaks and the cycles.
// What repeats is read from these counts without a scan per event: the
// session tracker asks on every observation.
import { bump, Counter } from "./counts.ts";
import { CycleTracker } from "./cycle.ts";
import { FailStreaks } from "./fail-streaks.ts";
import type { RepeatInfo, Signals } from "./types.ts";

/** A call's tool and coarse target, as repeats are reported. */
export interface Label {
  tool: string;
  target: string;
}

/** One call in the window (a slot is its own label). */
export interface WindowCall extends Label {
  fp: string;
  nfp: string;
  /** The normalized call with its answer: equal keys are the same call with the same result. */
  same: string;
  /** Tool and target: `${tool}\u0000${target}`. */
  targetKey: string;
  failed: boolean;
  novel: boolean;
  reverted: boolean;
}

/** What the window's counts say repeats. */
export type WindowRepeats = Pick<
  Signals,
  | "failStreak"
  | "failTarget"
  | "busiestTarget"
  | "busiestTargetCount"
  | "topRepeat"
  | "topSame"
  | "cycle"
  | "inARow"
  | "retrace"
>;

/** A repeat worth reporting (seen more than once). */
export function repeat(label: Label | undefined, count: number): RepeatInfo | null {
  return label && count > 1 ? { tool: label.tool, target: label.target, count } : null;
}

/** The field between a target key's first and second NUL, as `targetKey.split("\u0000")[1]` without a split. */
function secondField(c: WindowCall): string | null {
  if (c.tool.includes("\u0000") || c.target.includes("\u0000")) return c.targetKey.split("\u0000")[1] ?? null;
  return c.target;
}

/** The text before the first NUL of a key that starts with `nfp` and a NUL, as `split("\u0000")[0]`. */
function firstField(nfp: string): string {
  const i = nfp.indexOf("\u0000");
  return i < 0 ? nfp : nfp.slice(0, i);
}

export class CallWindow {
  private readonly ring: Array<WindowCall | undefined>;
  private head = 0;
  private count = 0;
  private readonly fpCount = new Map<string, number>();
  private readonly nfpCount = new Counter<null>();
  /** Noted with the call that first brought the key: its nfp names the label. */
  private readonly sameCount = new Counter<WindowCall>();
  private readonly targetCount = new Counter<WindowCall>();
  /** The latest call per normalized key still in the window. */
  private readonly labels = new Map<string, Label>();
  private readonly streaks = new FailStreaks();
  private readonly cycles = new CycleTracker();
  private novelCalls = 0;
  private revertedCalls = 0;
  private cached: WindowRepeats | null = null;

  constructor(capacity: number) {
    this.ring = new Array(capacity);
  }

  /** Calls in the window. */
  get size(): number {
    return this.count;
  }

  /** Different exact calls, normalized calls and calls-with-answer in the window. */
  get distinctFp(): number {
    return this.fpCount.size;
  }

  get distinctNfp(): number {
    return this.nfpCount.size;
  }

  get distinctSame(): number {
    return this.sameCount.size;
  }

  /** Calls in the window that were the first at their target, and that repeated or undid a change. */
  get novel(): number {
    return this.novelCalls;
  }

  get reverted(): number {
    return this.revertedCalls;
  }

  /** One call of the stretch; the oldest leaves a full window. */
  push(c: WindowCall): void {
    this.cached = null;
    const cap = this.ring.length;
    if (this.count === cap) this.drop(this.ring[this.head] as WindowCall);
    else this.count++;
    this.ring[this.head] = c;
    this.head = (this.head + 1) % cap;
    bump(this.fpCount, c.fp, 1);
    this.nfpCount.add(c.nfp, null);
    this.sameCount.add(c.same, c);
    this.targetCount.add(c.targetKey, c);
    this.labels.set(c.nfp, c);
    if (c.novel) this.novelCalls++;
    if (c.reverted) this.revertedCalls++;
    this.streaks.record(c.fp, c.nfp, c.failed);
    this.cycles.push(c.same, c.tool, c.target);
  }

  private drop(old: WindowCall): void {
    bump(this.fpCount, old.fp, -1);
    this.nfpCount.remove(old.nfp);
    this.sameCount.remove(old.same);
    this.targetCount.remove(old.targetKey);
    if (!this.nfpCount.has(old.nfp)) this.labels.delete(old.nfp);
    if (!this.fpCount.has(old.fp)) this.streaks.forget(old.fp);
    if (old.novel) this.novelCalls--;
    if (old.reverted) this.revertedCalls--;
  }

  /** A new stretch: nothing before it counts. */
  clear(): void {
    this.cached = null;
    this.ring.fill(undefined);
    this.head = 0;
    this.count = 0;
    this.fpCount.clear();
    this.nfpCount.clear();
    this.sameCount.clear();
    this.targetCount.clear();
    this.labels.clear();
    this.streaks.clear();
    this.cycles.reset();
    this.novelCalls = 0;
    this.revertedCalls = 0;
  }

  /** The maxima over the counts, the streaks and the cycles; the same object until the window changes. */
  repeats(): WindowRepeats {
    if (this.cached) return this.cached;
    const busiest = this.targetCount.max();
    const topNfp = this.nfpCount.max();
    const topSame = this.sameCount.max();
    const streak = this.streaks.max();
    this.cached = {
      failStreak: streak?.count ?? 0,
      failTarget: streak ? (this.labelOf(streak.nfp)?.target ?? null) : null,
      busiestTarget: busiest ? secondField(busiest.note) : null,
      busiestTargetCount: busiest?.n ?? 0,
      topRepeat: repeat(this.labelOf(topNfp?.key), topNfp?.n ?? 0),
      topSame: topSame ? repeat(this.labelOf(firstField(topSame.note.nfp)), topSame.n) : null,
      cycle: this.cycles.current(),
      inARow: this.cycles.row(),
      retrace: this.cycles.retrace(),
    };
    return this.cached;
  }

  private labelOf(key: string | undefined): Label | undefined {
    return key ? this.labels.get(key) : undefined;
  }
}
