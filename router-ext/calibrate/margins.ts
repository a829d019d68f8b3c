// How far each threshold sits from trouble: one knob at a time (the others
// fixed), the nearest value that flags a labelled healthy run and the nearest
// value that misses a labelled loop, with the runs concerned.
//
// The search leans on one property of the core: signals never depend on
// thresholds (except window, which is not scanned), and every rule is a
// ">= threshold" comparison (novelty: "<"), so moving a knob toward "flag
// more" can only add flags. The set of values that flag some healthy run is
// then a tail on one side of the current value and the set that misses some
// loop a tail on the other side, and each edge is found by galloping out from
// the current value and bisecting the last gap instead of replaying every
// step. test/unit/calibrate-margins.test.ts checks it against a full scan.
import type { Label, Policy, Thresholds } from "../../shared/index.ts";
import { type Prepared, tallies } from "./sweep.ts";

export type Knob = Exclude<keyof Thresholds, "window">;

export interface ScanRange {
  step: number;
  min: number;
  max: number;
  /** Which way the knob flags more. */
  flagsMore: "lower" | "higher";
}

const int = (min: number) => (v: number) => ({
  step: 1,
  min,
  // Far enough above to find the loop that goes missing, bounded so a knob no loop needs stops.
  max: Math.max(4 * v, v + 20),
  flagsMore: "lower" as const,
});
const share =
  (flagsMore: "lower" | "higher") =>
  (_v: number): ScanRange => ({ step: 0.05, min: 0, max: 1, flagsMore });
// 0 turns a dollar rule off, which would break the one-sided shape: scanned from one step up.
const usd = (v: number): ScanRange => ({
  step: 0.25,
  min: 0.25,
  max: Math.max(4 * v, 1),
  flagsMore: "lower",
});

/** Per knob: steps of 1 for counts (from the schema's minimum), 0.05 for shares, $0.25 for dollars. */
export const SCANS: Record<Knob, (current: number, t: Thresholds) => ScanRange> = {
  min_calls: (_v, t) => ({ step: 1, min: 1, max: t.window, flagsMore: "lower" }),
  stall_turns: int(1),
  stall_usd: usd,
  loop_turns: int(1),
  loop_usd: usd,
  dup_warn: share("lower"),
  dup_loop: share("lower"),
  fail_warn: int(1),
  fail_loop: int(1),
  flip_warn: int(1),
  flip_loop: int(1),
  top_warn: int(2),
  top_loop: int(2),
  row_warn: int(2),
  row_loop: int(2),
  cycle_warn: int(2),
  cycle_loop: int(2),
  retrace_warn: int(2),
  retrace_loop: int(2),
  top_ro_warn: int(2),
  top_ro_loop: int(2),
  cum_warn: int(2),
  cum_loop: int(2),
  novelty_ro_warn: share("higher"),
  continuation_warn: int(1),
  ceiling_turns: int(1),
  ceiling_usd: usd,
};

export const KNOBS = Object.keys(SCANS) as Knob[];

export interface Edge {
  value: number;
  /** The healthy runs flagged (or the loops missed) at that value. */
  ids: string[];
}

export interface KnobMargin {
  knob: Knob;
  current: number;
  range: ScanRange;
  /** Nearest value (the current one included) that flags a labelled healthy run; null: none in range. */
  falseFlag: Edge | null;
  /** Nearest value (the current one included) at which a labelled loop is never flagged; null: none in range. */
  missedLoop: Edge | null;
  /** The values around the current one that flag no healthy run and catch every loop; null if it does not. */
  safe: { from: number; to: number } | null;
  /** Rule off at the current value (a dollar knob at 0): not scanned. */
  off: boolean;
  /** Session trees replayed for this knob. */
  treeRuns: number;
}

const round = (v: number) => Math.round(v * 1e6) / 1e6;

/** The scan grid: min..max by step, plus the current value when it falls between steps. */
export function scanValues(current: number, r: ScanRange): number[] {
  const values: number[] = [];
  for (let i = 0; ; i++) {
    const v = round(r.min + i * r.step);
    if (v > r.max + 1e-9) break;
    values.push(v);
  }
  if (!values.some((v) => Math.abs(v - current) < 1e-9)) values.push(current);
  return values.sort((a, b) => a - b);
}

type Tree = Prepared["trees"][number];

/**
 * Finds the labelled runs in trouble (healthy runs flagged, or loops missed)
 * at one knob value, replaying only the trees that hold such runs. What it
 * learns is kept: the current thresholds are replayed once for every knob,
 * and a tree found clean at some distance from the current value is clean
 * nearer in too (the one-sided shape above), so the bisection and the final
 * listing re-run only the trees that were in trouble further out.
 */
export class Prober {
  /** Tree replays run. */
  runs = 0;
  private readonly trees: readonly Tree[];
  private readonly rank: Map<string, number>;
  private atCurrent: string[] | null = null;
  /** Per knob and side: per tree, the farthest distance from the current value known clean. */
  private readonly clean = new Map<string, Map<Tree, number>>();

  constructor(
    prepared: Prepared,
    private readonly labels: Readonly<Record<string, Label>>,
    private readonly trouble: "healthy flagged" | "loop missed",
    private readonly policy: Policy,
  ) {
    const want = trouble === "healthy flagged" ? "healthy" : "loop";
    this.trees = prepared.trees.filter((t) => t.sessions.some((s) => labels[s.id] === want));
    this.rank = new Map(prepared.sessions.map((s, i) => [s.id, i]));
  }

  /** The runs in trouble with `knob` at `value` and every other knob at its current value, in input order. */
  ids(knob: Knob, value: number): string[] {
    const current = this.policy.thresholds[knob];
    const dist = Math.abs(value - current);
    if (dist < 1e-9) {
      this.atCurrent ??= this.run(this.trees, this.policy.thresholds, null, 0);
      return this.atCurrent;
    }
    const side = `${knob}${value > current ? "+" : "-"}`;
    let clean = this.clean.get(side);
    if (!clean) {
      clean = new Map();
      this.clean.set(side, clean);
    }
    const known = clean;
    const todo = this.trees.filter((t) => (known.get(t) ?? -1) < dist - 1e-9);
    return this.run(todo, { ...this.policy.thresholds, [knob]: value }, known, dist);
  }

  private run(trees: readonly Tree[], thresholds: Thresholds, clean: Map<Tree, number> | null, dist: number) {
    const found: string[] = [];
    for (const tree of trees) {
      this.runs++;
      const res = tallies({ sessions: tree.sessions, trees: [tree] }, this.policy, thresholds);
      const before = found.length;
      for (const s of tree.sessions) {
        const o = res.get(s.id);
        if (o && this.isTrouble(s.id, o.worst, o.firstFlag)) found.push(s.id);
      }
      if (clean && found.length === before) clean.set(tree, Math.max(clean.get(tree) ?? -1, dist));
    }
    return found.sort((a, b) => (this.rank.get(a) ?? 0) - (this.rank.get(b) ?? 0));
  }

  private isTrouble(id: string, worst: string, firstFlag: number | null): boolean {
    const l = this.labels[id];
    return this.trouble === "healthy flagged"
      ? l === "healthy" && worst !== "ok"
      : l === "loop" && firstFlag === null;
  }
}

/**
 * The first value out from index `from` (exclusive) in direction `dir` for
 * which `isBad` holds, assuming once it holds it holds further out.
 */
function nearestBad(values: readonly number[], from: number, dir: 1 | -1, isBad: (v: number) => boolean) {
  const at = (k: number) => from + dir * k;
  const last = dir > 0 ? values.length - 1 - from : from;
  let good = 0;
  let k = 1;
  while (k <= last) {
    if (isBad(values[at(k)] as number)) {
      let bad = k;
      while (bad - good > 1) {
        const mid = (good + bad) >> 1;
        if (isBad(values[at(mid)] as number)) bad = mid;
        else good = mid;
      }
      return at(bad);
    }
    good = k;
    k = k === last ? last + 1 : Math.min(2 * k, last);
  }
  return null;
}

/** One knob's margins, with probers shared across knobs. */
export function knobMargin(
  knob: Knob,
  policy: Policy,
  probe: { healthy: Prober; loops: Prober },
): KnobMargin {
  const base = policy.thresholds;
  const current = base[knob];
  const range = SCANS[knob](current, base);
  const result: KnobMargin = {
    knob,
    current,
    range,
    falseFlag: null,
    missedLoop: null,
    safe: null,
    off: false,
    treeRuns: 0,
  };
  if (range.min > 0 && current === 0) {
    result.off = true;
    return result;
  }
  const runsBefore = probe.healthy.runs + probe.loops.runs;
  const values = scanValues(current, range);
  const c = values.findIndex((v) => Math.abs(v - current) < 1e-9);
  const toFlag = range.flagsMore === "lower" ? -1 : 1;

  const edge = (p: Prober, dir: 1 | -1): { index: number | null; edge: Edge | null } => {
    const here = p.ids(knob, current);
    if (here.length) return { index: c, edge: { value: current, ids: here } };
    const isBad = (v: number) => p.ids(knob, v).length > 0;
    // The far end first: clean there means clean all the way, and only the trees in trouble
    // there are replayed while closing in.
    const far = dir > 0 ? values.length - 1 : 0;
    const i = far !== c && isBad(values[far] as number) ? nearestBad(values, c, dir, isBad) : null;
    if (i === null) return { index: null, edge: null };
    const v = values[i] as number;
    return { index: i, edge: { value: v, ids: p.ids(knob, v) } };
  };
  const ff = edge(probe.healthy, toFlag);
  const ml = edge(probe.loops, toFlag > 0 ? -1 : 1);
  result.falseFlag = ff.edge;
  result.missedLoop = ml.edge;
  if (ff.index !== c && ml.index !== c) {
    // The safe run: from one step inside the false-flag edge to one step inside the missed-loop edge.
    const inner = (idx: number | null, dir: number) =>
      values[idx === null ? (dir > 0 ? values.length - 1 : 0) : idx - dir] as number;
    const a = inner(ff.index, toFlag);
    const b = inner(ml.index, -toFlag);
    result.safe = { from: Math.min(a, b), to: Math.max(a, b) };
  }
  result.treeRuns = probe.healthy.runs + probe.loops.runs - runsBefore;
  return result;
}

/** Every knob (window excluded), in the schema's order, over the labelled sessions prepared. */
export function margins(
  prepared: Prepared,
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  knobs: readonly Knob[] = KNOBS,
  onKnob?: (done: number, total: number) => void,
): KnobMargin[] {
  const probe = {
    healthy: new Prober(prepared, labels, "healthy flagged", policy),
    loops: new Prober(prepared, labels, "loop missed", policy),
  };
  return knobs.map((k, i) => {
    const m = knobMargin(k, policy, probe);
    onKnob?.(i + 1, knobs.length);
    return m;
  });
}
