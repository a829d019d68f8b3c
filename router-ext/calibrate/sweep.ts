// The calibrate command's sweep: the core's sweep (shared/sweep.ts, stored
// sessions prepared once, each candidate re-runs the trees) plus what the
// command adds: timing, progress, the current thresholds' row, the proposal
// (router-ext/calibrate/proposal.ts), the default grid and the --grid parser.
import {
  evaluatePrepared,
  parseConfig,
  type SweepRow,
  sweepPrepared,
  type Thresholds,
} from "../../shared/index.ts";
import { chooseProposal, type Proposal } from "./proposal.ts";

export {
  distance,
  evaluatePrepared,
  grid as gridOf,
  type Prepared,
  prepare,
  rank,
  tallies,
} from "../../shared/index.ts";

export interface SweepResult {
  /** The current thresholds' row. */
  current: SweepRow;
  rows: SweepRow[];
  /** Candidates that catch every labelled loop and flag no healthy session, best first. */
  perfect: SweepRow[];
  /** The earliest-flagging safe candidate (shared/sweep.ts rank); null when every candidate flags a healthy session. */
  earliest: SweepRow | null;
  /** What calibrate proposes (router-ext/calibrate/proposal.ts): the current row to keep, a change, or null. */
  proposed: SweepRow | null;
  /** The proposal with its reason, the moved knobs' margins on the labels and the warnings. */
  proposal: Proposal;
  candidates: number;
  ms: number;
}

/** The core's sweep (same arguments), timed, with the current thresholds' row and the proposal. */
export function runSweep(...args: Parameters<typeof sweepPrepared>): SweepResult {
  const [prepared, labels, policy, candidates] = args;
  const t0 = performance.now();
  const { rows, ranked } = sweepPrepared(...args);
  const current = evaluatePrepared(prepared, labels, policy, {});
  const proposal = chooseProposal({ prepared, labels, policy, current, ranked });
  return {
    current,
    rows,
    perfect: ranked.filter((r) => r.loops > 0 && r.loopsCaught === r.loops),
    earliest: ranked[0] ?? null,
    proposed: proposal.row,
    proposal,
    candidates: candidates.length,
    ms: performance.now() - t0,
  };
}

/**
 * The default grid: the knobs that decide when a stall is first flagged,
 * around the defaults (each shipped value is on it), 486 candidates.
 */
export const DEFAULT_AXES: { [K in keyof Thresholds]?: number[] } = {
  stall_turns: [3, 5, 7],
  dup_warn: [0.3, 0.4, 0.5],
  top_warn: [5, 7, 10],
  fail_warn: [4, 8],
  row_warn: [3, 5, 7],
  retrace_warn: [3, 4, 6],
};

/**
 * Parses `--grid "stall_turns=2,4,6;dup_warn=0.3,0.4"`. Every value is checked
 * against the config schema, so a bad one fails with its key path.
 */
export function parseGrid(spec: string): { [K in keyof Thresholds]?: number[] } {
  const axes: Record<string, number[]> = {};
  for (const part of spec
    .split(";")
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^([a-z_]+)\s*=\s*(.+)$/.exec(part);
    if (!m) throw new Error(`--grid: expected key=v1,v2 but got "${part}"`);
    const key = m[1] as string;
    const values = (m[2] as string).split(",").map((v) => Number(v.trim()));
    if (values.some((v) => !Number.isFinite(v))) throw new Error(`--grid: ${key}: values must be numbers`);
    for (const v of values) {
      const r = parseConfig([{ source: "--grid", value: { thresholds: { [key]: v } } }]);
      if (!r.ok) {
        const i = r.issues[0];
        throw new Error(`--grid: ${i?.path}: ${i?.message} (value ${v})`);
      }
    }
    axes[key] = values;
  }
  if (!Object.keys(axes).length) throw new Error("--grid: no axes given");
  return axes;
}
