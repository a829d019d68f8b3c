// The threshold sweep, made fast: stored sessions become observations once
// (hashing, parsing commands: the costly part), then each candidate only
// replays those observations through a fresh SessionForest. Candidates change
// thresholds only, and the observations do not depend on thresholds.
import {
  type Label,
  median,
  mergedObservations,
  type Observation,
  type Policy,
  parseConfig,
  type ReplaySession,
  SessionForest,
  type SweepRow,
  type Thresholds,
  treesOf,
  VERDICT_RANK,
  type Verdict,
} from "../../shared/index.ts";

export interface Prepared {
  sessions: ReadonlyArray<{ id: string; parentId: string | null }>;
  /** Per tree: its sessions and their observations merged by time, as replay() runs them. */
  trees: ReadonlyArray<{
    sessions: ReadonlyArray<{ id: string; parentId: string | null }>;
    observations: Observation[];
  }>;
}

/** Same trees, conversion and merge order as shared/replay.ts (its own exports). */
export function prepare(sessions: readonly ReplaySession[], policy: Policy): Prepared {
  return {
    sessions: sessions.map((s) => ({ id: s.id, parentId: s.parentId })),
    trees: treesOf(sessions).map((tree) => ({
      sessions: tree.map((s) => ({ id: s.id, parentId: s.parentId })),
      observations: mergedObservations(tree, policy),
    })),
  };
}

export interface Outcome {
  calls: number;
  worst: Verdict;
  firstFlag: number | null;
}

/** Replays prepared observations under `thresholds`: per session, the worst verdict and the first flag. */
export function outcomes(prepared: Prepared, policy: Policy, thresholds: Thresholds): Map<string, Outcome> {
  const out = new Map<string, Outcome>();
  const get = (id: string): Outcome => {
    let o = out.get(id);
    if (!o) {
      o = { calls: 0, worst: "ok", firstFlag: null };
      out.set(id, o);
    }
    return o;
  };
  for (const tree of prepared.trees) {
    const forest = new SessionForest(
      { ...policy, thresholds },
      { maxSessions: Math.max(10_000, tree.sessions.length * 2) },
    );
    for (const s of tree.sessions) {
      forest.setParent(s.id, s.parentId);
      get(s.id);
    }
    for (const obs of tree.observations) {
      const { event, changes } = forest.observe(obs);
      if (event) get(event.sessionId).calls++;
      for (const c of changes) {
        const o = get(c.sessionId);
        if (VERDICT_RANK[c.verdict] > VERDICT_RANK[o.worst]) o.worst = c.verdict;
        if (c.verdict !== "ok" && o.firstFlag === null) o.firstFlag = Math.max(o.calls, 1);
      }
    }
  }
  return out;
}

/** One candidate's row, the same figures as shared/sweep.ts evaluateCandidate. */
export function evaluatePrepared(
  prepared: Prepared,
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidate: Partial<Thresholds>,
): SweepRow {
  const results = outcomes(prepared, policy, { ...policy.thresholds, ...candidate });
  let loops = 0;
  let healthy = 0;
  let healthyFlagged = 0;
  const detections: number[] = [];
  for (const s of prepared.sessions) {
    const r = results.get(s.id);
    const label = labels[s.id];
    if (!r || !label) continue;
    if (label === "loop") {
      loops++;
      if (r.firstFlag !== null) detections.push(r.firstFlag);
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

/** Relative distance of a candidate from the current thresholds (the tie-break). */
export function distance(candidate: Partial<Thresholds>, base: Thresholds): number {
  return Object.entries(candidate).reduce((sum, [k, v]) => {
    const b = base[k as keyof Thresholds] as number;
    return sum + Math.abs((v as number) - b) / (Math.abs(b) || 1);
  }, 0);
}

/**
 * The ranking shared/sweep.ts uses: no healthy session flagged, most loops
 * caught, earliest median detection, earliest worst detection, then closest
 * to the current thresholds.
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

export interface SweepResult {
  /** The current thresholds' row. */
  current: SweepRow;
  rows: SweepRow[];
  /** Candidates that catch every labelled loop and flag no healthy session, best first. */
  perfect: SweepRow[];
  /** The best safe candidate (perfect or not); null when every candidate flags a healthy session. */
  proposed: SweepRow | null;
  candidates: number;
  ms: number;
}

export function runSweep(
  prepared: Prepared,
  labels: Readonly<Record<string, Label>>,
  policy: Policy,
  candidates: ReadonlyArray<Partial<Thresholds>>,
  onProgress?: (done: number, total: number) => void,
): SweepResult {
  const t0 = performance.now();
  const rows = candidates.map((c, i) => {
    const row = evaluatePrepared(prepared, labels, policy, c);
    onProgress?.(i + 1, candidates.length);
    return row;
  });
  const ranked = rank(rows, policy.thresholds);
  return {
    current: evaluatePrepared(prepared, labels, policy, {}),
    rows,
    perfect: ranked.filter((r) => r.loops > 0 && r.loopsCaught === r.loops),
    proposed: ranked[0] ?? null,
    candidates: candidates.length,
    ms: performance.now() - t0,
  };
}

/** The default grid: the knobs that decide when a stall is first flagged, around the defaults. */
export const DEFAULT_AXES: { [K in keyof Thresholds]?: number[] } = {
  stall_turns: [2, 3, 4, 6, 8],
  dup_warn: [0.25, 0.3, 0.4, 0.5],
  top_warn: [4, 6, 8, 12],
  fail_warn: [3, 4, 6],
};

/** Every combination of the axes' values. */
export function gridOf(axes: { [K in keyof Thresholds]?: number[] }): Array<Partial<Thresholds>> {
  let out: Array<Partial<Thresholds>> = [{}];
  for (const [key, values] of Object.entries(axes)) {
    if (!values?.length) continue;
    out = out.flatMap((partial) => values.map((v) => ({ ...partial, [key]: v })));
  }
  return out;
}

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
