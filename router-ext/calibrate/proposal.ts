// Which swept candidate calibrate proposes, and why. The sweep ranks safe
// candidates by how early they flag, and the earliest safe candidate on a
// few labels is a guess: drawn from the shared corpora (58 healthy, 48 loop
// runs), the earliest candidate that flagged no labelled healthy run flagged
// healthy runs of the whole corpora in 37 of 40 draws of 3 labels of each
// kind, 33 of 40 with 10 of each and still 15 of 40 with 30 of each (the
// healthy runs that bound a knob are few, and a sample misses them). So the
// proposal only goes as far as the labels give evidence for:
//
// - the current thresholds flag no healthy-labelled session and catch every
//   loop-labelled one: keep them (an earlier candidate is shown, not proposed);
// - otherwise the candidate nearest the current thresholds that fixes what
//   the labels show, a knob moved toward flagging more only when a labelled
//   loop is missed, and every knob it moves at least MIN_STEPS from its
//   nearest false flag on the labels (a knob moved toward flagging more must
//   have such a false flag in its scan range: the labels must bound it);
// - with fewer than MIN_LABELS labels of a kind it warns: the margins come
//   from that few runs.
import type { Label, Policy, SweepRow, Thresholds } from "../../shared/index.ts";
import type { Prepared } from "../../shared/replay.ts";
import { distance, evaluatePrepared } from "../../shared/sweep.ts";
import { type Knob, knobMargin, Prober, SCANS } from "./margins.ts";

/** Labels of each kind below which a proposal carries a warning. */
export const MIN_LABELS = 5;
/** Steps a moved knob keeps from its nearest false flag on the labels (the shipped defaults keep two). */
export const MIN_STEPS = 2;
/** Candidates tried, nearest first, before giving up (each try replays the labelled trees). */
const MAX_TRIED = 20;

export interface Edge {
  value: number;
  /** Steps of the knob's scan (1 for counts, 0.05 for shares, $0.25 for dollars) from the proposed value. */
  steps: number;
  ids: string[];
}

export interface KnobChange {
  knob: keyof Thresholds;
  from: number;
  to: number;
  /** tighter: flags more than before; looser: flags less. */
  direction: "tighter" | "looser";
  /** Nearest value toward flagging more that flags a labelled healthy run; null: none in the scanned range. */
  falseFlag: Edge | null;
  /** Nearest value toward flagging less that misses a labelled loop; null: none in the scanned range. */
  missedLoop: Edge | null;
}

export interface Proposal {
  /** keep: the current thresholds; change: `row`'s; none: no candidate passes the rule. */
  status: "keep" | "change" | "none";
  row: SweepRow | null;
  changes: KnobChange[];
  /** Why, in one sentence. */
  reason: string;
  warnings: string[];
  /** The earliest-flagging safe candidate when it is not the one proposed, and why not. */
  notProposed: { row: SweepRow; why: string } | null;
}

export interface ProposalInput {
  prepared: Prepared;
  labels: Readonly<Record<string, Label>>;
  policy: Policy;
  current: SweepRow;
  /** Safe candidates, earliest-flagging first (shared/sweep.ts rank). */
  ranked: readonly SweepRow[];
}

const sameValue = (a: number, b: number) => Math.abs(a - b) < 1e-9;
const thresholdsText = (r: SweepRow) =>
  Object.entries(r.thresholds)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ") || "(current)";

/** The knobs a candidate moves away from the current thresholds. */
function moved(row: SweepRow, base: Thresholds): Array<[keyof Thresholds, number]> {
  return (Object.entries(row.thresholds) as Array<[keyof Thresholds, number]>).filter(
    ([k, v]) => !sameValue(v, base[k]),
  );
}

function direction(knob: keyof Thresholds, from: number, to: number, base: Thresholds): "tighter" | "looser" {
  const scan = knob in SCANS ? SCANS[knob as Knob](from, base) : null;
  // window (not scanned): a longer window keeps more evidence, so it flags more.
  const lowerFlagsMore = scan ? scan.flagsMore === "lower" : false;
  return to < from === lowerFlagsMore ? "tighter" : "looser";
}

/** Each moved knob with its margins on the labels, every other knob at the candidate's value. */
export function changesOf(row: SweepRow, input: ProposalInput): KnobChange[] {
  const base = input.policy.thresholds;
  const policy: Policy = { ...input.policy, thresholds: { ...base, ...row.thresholds } };
  const probe = {
    healthy: new Prober(input.prepared, input.labels, "healthy flagged", policy),
    loops: new Prober(input.prepared, input.labels, "loop missed", policy),
  };
  return moved(row, base).map(([knob, to]) => {
    const change: KnobChange = {
      knob,
      from: base[knob],
      to,
      direction: direction(knob, base[knob], to, base),
      falseFlag: null,
      missedLoop: null,
    };
    if (!(knob in SCANS)) return change;
    const m = knobMargin(knob as Knob, policy, probe);
    const edge = (e: { value: number; ids: string[] } | null): Edge | null =>
      e ? { value: e.value, steps: Math.round(Math.abs(e.value - to) / m.range.step), ids: e.ids } : null;
    return { ...change, falseFlag: edge(m.falseFlag), missedLoop: edge(m.missedLoop) };
  });
}

/** Why a candidate's moved knobs fail the margin rule (from their scanned margins), or null when they pass. */
export function marginProblem(changes: readonly KnobChange[]): string | null {
  for (const c of changes) {
    if (!(c.knob in SCANS)) continue;
    if (c.falseFlag && c.falseFlag.steps < MIN_STEPS)
      return `${c.knob} ${c.to} is ${c.falseFlag.steps} step(s) from a false flag at ${c.falseFlag.value} (${c.falseFlag.ids.join(", ")})`;
    if (!c.falseFlag && c.direction === "tighter")
      return `${c.knob} ${c.to} flags more, and no healthy-labelled run bounds it (none flagged anywhere in its scan range)`;
  }
  return null;
}

/** Whether `knob` at `value` (the others at `thresholds`) has MIN_STEPS - 1 clear steps toward flagging more. */
function clearAt(input: ProposalInput, thresholds: Thresholds, knob: Knob, value: number): boolean {
  const at = { ...thresholds, [knob]: value };
  const healthy = new Prober(input.prepared, input.labels, "healthy flagged", {
    ...input.policy,
    thresholds: at,
  });
  const range = SCANS[knob](value, at);
  const toward = range.flagsMore === "lower" ? -1 : 1;
  for (let step = 1; step < MIN_STEPS; step++) {
    const v = Math.round((value + toward * step * range.step) * 1e6) / 1e6;
    if (v < range.min - 1e-9 || v > range.max + 1e-9) return true;
    if (healthy.ids(knob, v).length > 0) return false;
  }
  return true;
}

/**
 * A safe candidate (it flags no healthy-labelled run) with each knob it
 * moves pushed away from its nearest false flag, a scan step at a time,
 * until MIN_STEPS clear it: a grid holds few values, the knob's own scan
 * steps decide the margin. The row being safe, a false flag one step out is
 * that knob's own, and loosening one knob never brings another's nearer, so
 * one pass does. Null when a knob leaves its scan range or the result
 * catches fewer than `loops` loop-labelled sessions.
 */
export function widened(row: SweepRow, input: ProposalInput, loops: number): SweepRow | null {
  const base = input.policy.thresholds;
  const t: Thresholds = { ...base, ...row.thresholds };
  for (const [k] of moved(row, base)) {
    if (!(k in SCANS)) continue;
    const knob = k as Knob;
    for (let tries = 0; !clearAt(input, t, knob, t[knob]); tries++) {
      const range = SCANS[knob](t[knob], t);
      const next = Math.round((t[knob] + (range.flagsMore === "lower" ? 1 : -1) * range.step) * 1e6) / 1e6;
      if (tries >= 50 || next < range.min - 1e-9 || next > range.max + 1e-9) return null;
      t[knob] = next;
    }
  }
  const partial = Object.fromEntries(Object.keys(row.thresholds).map((k) => [k, t[k as keyof Thresholds]]));
  const out = evaluatePrepared(input.prepared, input.labels, input.policy, partial);
  return out.healthyFlagged === 0 && out.loopsCaught >= loops ? out : null;
}

function fewLabels(row: SweepRow): string[] {
  if (row.healthy >= MIN_LABELS && row.loops >= MIN_LABELS) return [];
  return [
    `only ${row.healthy} healthy and ${row.loops} loop label(s) among the sessions loaded (the rule wants ${MIN_LABELS} of each): the margins come from that few runs; label more before trusting a change`,
  ];
}

const perfectOn = (r: SweepRow) => r.healthyFlagged === 0 && r.loopsCaught === r.loops;

/** Sort order: more loops caught, then nearer the current thresholds, then flagging earlier. */
function nearness(a: SweepRow, b: SweepRow, base: Thresholds): number {
  return (
    b.loopsCaught - a.loopsCaught ||
    distance(a.thresholds, base) - distance(b.thresholds, base) ||
    (a.medianCallsToDetection ?? Infinity) - (b.medianCallsToDetection ?? Infinity)
  );
}

/** The current thresholds kept, with the earliest candidate shown as not proposed. */
function keep(current: SweepRow, earliest: SweepRow | null, warnings: string[]): Proposal {
  return {
    status: "keep",
    row: { ...current, thresholds: {} },
    changes: [],
    reason:
      "the current thresholds flag no healthy-labelled session and catch every loop-labelled one: the labels ask for no change",
    warnings,
    notProposed: earliest
      ? {
          row: earliest,
          why: "it flags earlier on these labels, but labels that show no false alarm and no missed loop give no evidence that flagging earlier is safe",
        }
      : null,
  };
}

/**
 * The safe candidates with their tightened knobs left at the current values,
 * once each, nearest first. Flagging less than a safe row everywhere, each is
 * safe too; their loops are counted when tried.
 */
function looserOnly(ranked: readonly SweepRow[], base: Thresholds): SweepRow[] {
  const seen = new Map<string, SweepRow>();
  for (const r of ranked) {
    const kept = moved(r, base).filter(([k, v]) => direction(k, base[k], v, base) === "looser");
    const key = JSON.stringify(kept);
    if (kept.length > 0 && !seen.has(key))
      seen.set(key, { ...r, thresholds: Object.fromEntries(kept) as Partial<Thresholds> });
  }
  return [...seen.values()].sort((a, b) => distance(a.thresholds, base) - distance(b.thresholds, base));
}

/** The proposal for a sweep (see the rule at the top of this file). */
export function chooseProposal(input: ProposalInput): Proposal {
  const { current, ranked } = input;
  const base = input.policy.thresholds;
  const warnings = fewLabels(current);
  if (perfectOn(current))
    return keep(current, ranked.find((r) => moved(r, base).length > 0) ?? null, warnings);
  const missesLoops = current.loopsCaught < current.loops;
  // Without a missed loop nothing asks to flag more: a candidate's tightened knobs stay where they are.
  const candidates = missesLoops
    ? [...ranked].sort((a, b) => nearness(a, b, base))
    : looserOnly(ranked, base);
  const needLoops = missesLoops ? 0 : current.loops;
  const what = `the current thresholds flag ${current.healthyFlagged}/${current.healthy} healthy-labelled and catch ${current.loopsCaught}/${current.loops} loop-labelled session(s)`;
  // Each of the nearest candidates widened to the rule; the nearest result wins, then the earliest.
  let firstProblem: string | null = null;
  let best: { row: SweepRow; changes: KnobChange[] } | null = null;
  for (const candidate of candidates.slice(0, MAX_TRIED)) {
    const row = widened(candidate, input, missesLoops ? candidate.loopsCaught : needLoops);
    const changes = row ? changesOf(row, input) : [];
    const problem = row
      ? marginProblem(changes)
      : `${thresholdsText(candidate)} cannot keep ${MIN_STEPS} steps from a false flag and still catch the loops`;
    if (problem !== null || !row) {
      firstProblem ??= problem;
      continue;
    }
    if (!best || nearness(row, best.row, base) < 0) best = { row, changes };
  }
  if (best)
    return {
      status: "change",
      row: best.row,
      changes: best.changes,
      reason: `${what}; this is the nearest candidate that fixes it, each knob it moves kept at least ${MIN_STEPS} steps from a false flag on the labels`,
      warnings,
      notProposed: null,
    };
  return {
    status: "none",
    row: null,
    changes: [],
    reason: candidates.length
      ? `${what}; none of the ${Math.min(candidates.length, MAX_TRIED)} nearest candidates that fix it keeps ${MIN_STEPS} steps from a false flag on the labels (${firstProblem})`
      : `${what}; no candidate fixes it${missesLoops ? "" : " by flagging less"} without flagging a healthy-labelled session`,
    warnings,
    notProposed: null,
  };
}
