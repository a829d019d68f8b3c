// Threshold sweep over labelled sessions: for each candidate, how many loops
// it catches, how many healthy sessions it flags, and how early it catches.
import type { Thresholds } from "./config.ts";
import type { Policy } from "./policy.ts";
import { type ReplaySession, replay } from "./replay.ts";

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

/** Every combination of the given values per knob. */
export function grid(axes: { [K in keyof Thresholds]?: Array<Thresholds[K]> }): Array<Partial<Thresholds>> {
  let out: Array<Partial<Thresholds>> = [{}];
  for (const [key, values] of Object.entries(axes) as Array<[keyof Thresholds, number[]]>) {
    out = out.flatMap((partial) => values.map((v) => ({ ...partial, [key]: v })));
  }
  return out;
}

export function evaluateCandidate(
  sessions: readonly ReplaySession[],
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidate: Partial<Thresholds>,
): SweepRow {
  const results = replay(sessions, { ...policy, thresholds: { ...policy.thresholds, ...candidate } });
  let loops = 0;
  let healthy = 0;
  let healthyFlagged = 0;
  const detections: number[] = [];
  for (const r of results) {
    const label = labels[r.id];
    if (label === "loop") {
      loops++;
      if (r.first_flag_call !== null) detections.push(r.first_flag_call);
    } else if (label === "healthy") {
      healthy++;
      if (r.worst !== "ok") healthyFlagged++;
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

/**
 * Sweeps candidates and proposes one: no healthy session flagged, the most
 * loops caught, the earliest median detection; ties go to the candidate
 * closest to the current thresholds, so calibration moves knobs only as far
 * as the data asks.
 */
export function sweep(
  sessions: readonly ReplaySession[],
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidates: ReadonlyArray<Partial<Thresholds>>,
): { rows: SweepRow[]; proposed: SweepRow | null } {
  const rows = candidates.map((c) => evaluateCandidate(sessions, labels, policy, c));
  const distance = (c: Partial<Thresholds>) =>
    Object.entries(c).reduce((sum, [k, v]) => {
      const base = policy.thresholds[k as keyof Thresholds] as number;
      return sum + Math.abs((v as number) - base) / (Math.abs(base) || 1);
    }, 0);
  const safe = rows.filter((r) => r.healthyFlagged === 0);
  safe.sort(
    (a, b) =>
      b.loopsCaught - a.loopsCaught ||
      (a.medianCallsToDetection ?? Number.POSITIVE_INFINITY) -
        (b.medianCallsToDetection ?? Number.POSITIVE_INFINITY) ||
      (a.maxCallsToDetection ?? Number.POSITIVE_INFINITY) -
        (b.maxCallsToDetection ?? Number.POSITIVE_INFINITY) ||
      distance(a.thresholds) - distance(b.thresholds),
  );
  return { rows, proposed: safe[0] ?? null };
}
