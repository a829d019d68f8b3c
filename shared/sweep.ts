// Threshold sweep over labelled sessions: for each candidate, how many loops
// it catches, how many healthy sessions it flags, and how early it catches.
// Stored sessions are prepared once; each candidate only re-runs the trees.
import type { Thresholds } from "./config.ts";
import type { Policy } from "./policy.ts";
import {
  type Prepared,
  prepare,
  type ReplaySession,
  runTree,
  type SessionTally,
  tallyStep,
} from "./replay.ts";

export type Label = "loop" | "healthy" | "unclear";

export interface SweepRow {
  thresholds: Partial<Thresholds>;
  loops: number;
  loopsCaught: number;
  healthy: number;
  healthyFlagged: number;
  /** Median 1-based call index of the first flag, over the loops caught. */
  medianCallsToDetection: number | null;
  maxCallsToDetection: number | null;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Every combination of the given values per knob (an axis without values is left out). */
export function grid(axes: { [K in keyof Thresholds]?: Array<Thresholds[K]> }): Array<Partial<Thresholds>> {
  let out: Array<Partial<Thresholds>> = [{}];
  for (const [key, values] of Object.entries(axes) as Array<[keyof Thresholds, number[] | undefined]>) {
    if (!values?.length) continue;
    out = out.flatMap((partial) => values.map((v) => ({ ...partial, [key]: v })));
  }
  return out;
}

/** Runs prepared trees under `thresholds`: per session, calls, the worst verdict and the first flag. */
export function tallies(
  prepared: Prepared,
  policy: Policy,
  thresholds: Thresholds,
): Map<string, SessionTally> {
  const out = new Map<string, SessionTally>();
  const p = { ...policy, thresholds };
  for (const tree of prepared.trees) runTree(tree, p, (step) => tallyStep(out, step));
  return out;
}

/** One candidate's row. */
export function evaluatePrepared(
  prepared: Prepared,
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidate: Partial<Thresholds>,
): SweepRow {
  const results = tallies(prepared, policy, { ...policy.thresholds, ...candidate });
  let loops = 0;
  let healthy = 0;
  let healthyFlagged = 0;
  const detections: number[] = [];
  for (const s of prepared.sessions) {
    const label = labels[s.id];
    const r = results.get(s.id);
    if (label === "loop") {
      loops++;
      if (r && r.firstFlag !== null) detections.push(r.firstFlag);
    } else if (label === "healthy") {
      healthy++;
      if (r && r.worst !== "ok") healthyFlagged++;
    }
  }
  return {
    thresholds: candidate,
    loops,
    loopsCaught: detections.length,
    healthy,
    healthyFlagged,
    medianCallsToDetection: median(detections),
    maxCallsToDetection: detections.length ? Math.max(...detections) : null,
  };
}

export function evaluateCandidate(
  sessions: readonly ReplaySession[],
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidate: Partial<Thresholds>,
): SweepRow {
  return evaluatePrepared(prepare(sessions, policy), labels, policy, candidate);
}

/** Relative distance of a candidate from the current thresholds (the tie-break). */
export function distance(candidate: Partial<Thresholds>, base: Thresholds): number {
  return Object.entries(candidate).reduce((sum, [k, v]) => {
    const b = base[k as keyof Thresholds] as number;
    return sum + Math.abs((v as number) - b) / (Math.abs(b) || 1);
  }, 0);
}

/**
 * Safe candidates best first: no healthy session flagged, then the most loops
 * caught, the earliest median and worst detection, then the closest to the
 * current thresholds, so calibration moves knobs only as far as the data asks.
 */
export function rank(rows: readonly SweepRow[], base: Thresholds): SweepRow[] {
  const inf = Number.POSITIVE_INFINITY;
  return rows
    .filter((r) => r.healthyFlagged === 0)
    .sort(
      (a, b) =>
        b.loopsCaught - a.loopsCaught ||
        (a.medianCallsToDetection ?? inf) - (b.medianCallsToDetection ?? inf) ||
        (a.maxCallsToDetection ?? inf) - (b.maxCallsToDetection ?? inf) ||
        distance(a.thresholds, base) - distance(b.thresholds, base),
    );
}

/** Every candidate's row (in candidate order) and the safe ones ranked. */
export function sweepPrepared(
  prepared: Prepared,
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidates: ReadonlyArray<Partial<Thresholds>>,
  onProgress?: (done: number, total: number) => void,
): { rows: SweepRow[]; ranked: SweepRow[] } {
  const rows = candidates.map((c, i) => {
    const row = evaluatePrepared(prepared, labels, policy, c);
    onProgress?.(i + 1, candidates.length);
    return row;
  });
  return { rows, ranked: rank(rows, policy.thresholds) };
}

/** Sweeps candidates and proposes the best safe one (null when every candidate flags a healthy session). */
export function sweep(
  sessions: readonly ReplaySession[],
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidates: ReadonlyArray<Partial<Thresholds>>,
): { rows: SweepRow[]; proposed: SweepRow | null } {
  const { rows, ranked } = sweepPrepared(prepare(sessions, policy), labels, policy, candidates);
  return { rows, proposed: ranked[0] ?? null };
}
