// The audit of a labelled set: loops caught, healthy runs flagged, how early,
// and the reason behind every false flag and every missed loop, so a user can
// check the detector on their own history. Pure: replay results and
// explanations in, figures out.
import { type Label, median, type ReplayResult, type Thresholds } from "../../shared/index.ts";
import { describeFlag, describeMiss, type Explanation } from "./explain.ts";
import { type LabelSet, labelCounts, mergeSets } from "./labels.ts";
import { type Half, halfOf } from "./split.ts";

export interface Figures {
  loops: number;
  loopsCaught: number;
  healthy: number;
  healthyFlagged: number;
  /** Over the loops caught: 1-based call of the first flag. */
  medianFirstFlag: number | null;
  maxFirstFlag: number | null;
  /**
   * Over the loops caught whose label gives a start ("calls X-Y"): calls from
   * that start to the first flag (negative: flagged before it). Null when none does.
   */
  medianFromStart: number | null;
  maxFromStart: number | null;
}

/** First flags against the labelled loop starts ("calls X-Y" in a loop's note). */
export interface LoopStarts {
  /** Caught loops whose note gives a start. */
  loops: number;
  medianStart: number | null;
  medianFirstFlag: number | null;
  /** Of those, flagged before the labelled start. */
  flaggedBeforeStart: number;
}

export interface FalseFlag {
  id: string;
  half: Half;
  call: number | null;
  verdict: string;
  reason: string | null;
  /** The rule and the signal values behind it. */
  why: string;
}

export interface MissedLoop {
  id: string;
  half: Half;
  calls: number;
  /** How close each rule came. */
  why: string;
}

export interface SetAudit {
  name: string;
  /** Labelled sessions that were loaded, per label. */
  labelled: Record<Label, number>;
  /** Sessions the set labels that were not among those loaded. */
  notLoaded: number;
  all: Figures;
  /** With --split: the same figures on each half of the fixed split. */
  halves: Record<Half, Figures> | null;
  loopStarts: LoopStarts | null;
  falseFlags: FalseFlag[];
  missed: MissedLoop[];
}

export interface Audit {
  split: boolean;
  sets: SetAudit[];
}

/** The figures over the sessions in `results` that `labels` labels; `starts`: the labelled loop starts. */
export function figures(
  results: readonly ReplayResult[],
  labels: Readonly<Record<string, Label>>,
  starts: Readonly<Record<string, number>> = {},
): Figures {
  let loops = 0;
  let healthy = 0;
  let healthyFlagged = 0;
  const firsts: number[] = [];
  const fromStart: number[] = [];
  for (const r of results) {
    const l = labels[r.id];
    if (l === "loop") {
      loops++;
      if (r.first_flag_call === null) continue;
      firsts.push(r.first_flag_call);
      const start = starts[r.id];
      if (start !== undefined) fromStart.push(r.first_flag_call - start);
    } else if (l === "healthy") {
      healthy++;
      if (r.worst !== "ok") healthyFlagged++;
    }
  }
  return {
    loops,
    loopsCaught: firsts.length,
    healthy,
    healthyFlagged,
    medianFirstFlag: median(firsts),
    maxFirstFlag: firsts.length ? Math.max(...firsts) : null,
    medianFromStart: median(fromStart),
    maxFromStart: fromStart.length ? Math.max(...fromStart) : null,
  };
}

function loopStarts(results: readonly ReplayResult[], set: LabelSet): LoopStarts | null {
  const starts: number[] = [];
  const firsts: number[] = [];
  let before = 0;
  for (const r of results) {
    const start = set.loopStarts[r.id];
    if (set.labels[r.id] !== "loop" || start === undefined || r.first_flag_call === null) continue;
    starts.push(start);
    firsts.push(r.first_flag_call);
    if (r.first_flag_call < start) before++;
  }
  if (!starts.length) return null;
  return {
    loops: starts.length,
    medianStart: median(starts),
    medianFirstFlag: median(firsts),
    flaggedBeforeStart: before,
  };
}

/** The sessions the audit has to explain: healthy runs flagged and loops never flagged, in any set. */
export function toExplain(results: readonly ReplayResult[], sets: readonly LabelSet[]): Set<string> {
  const ids = new Set<string>();
  for (const r of results) {
    for (const s of sets) {
      const l = s.labels[r.id];
      if ((l === "healthy" && r.worst !== "ok") || (l === "loop" && r.first_flag_call === null))
        ids.add(r.id);
    }
  }
  return ids;
}

export function auditSet(
  set: LabelSet,
  results: readonly ReplayResult[],
  explained: ReadonlyMap<string, Explanation>,
  thresholds: Thresholds,
  opts: { split?: boolean } = {},
): SetAudit {
  const mine = results.filter((r) => set.labels[r.id] !== undefined);
  const loaded = new Set(mine.map((r) => r.id));
  const falseFlags: FalseFlag[] = [];
  const missed: MissedLoop[] = [];
  for (const r of mine) {
    const l = set.labels[r.id];
    const x = explained.get(r.id);
    if (l === "healthy" && r.worst !== "ok") {
      falseFlags.push({
        id: r.id,
        half: halfOf(r.id),
        call: r.first_flag_call,
        verdict: r.worst,
        reason: r.reason,
        why: x?.first ? describeFlag(x.first, thresholds) : (r.reason ?? "flagged"),
      });
    } else if (l === "loop" && r.first_flag_call === null) {
      missed.push({
        id: r.id,
        half: halfOf(r.id),
        calls: r.calls,
        why: x ? describeMiss(x.peaks, thresholds) : "never flagged",
      });
    }
  }
  const inHalf = (h: Half) => mine.filter((r) => halfOf(r.id) === h);
  return {
    name: set.name,
    labelled: labelCounts(set.labels, [...loaded]),
    notLoaded: Object.keys(set.labels).filter((id) => !loaded.has(id)).length,
    all: figures(mine, set.labels, set.loopStarts),
    halves: opts.split
      ? {
          A: figures(inHalf("A"), set.labels, set.loopStarts),
          B: figures(inHalf("B"), set.labels, set.loopStarts),
        }
      : null,
    loopStarts: loopStarts(mine, set),
    falseFlags,
    missed,
  };
}

/** Every set on its own, then all sets together when there are several (later labels win). */
export function audit(
  sets: readonly LabelSet[],
  results: readonly ReplayResult[],
  explained: ReadonlyMap<string, Explanation>,
  thresholds: Thresholds,
  opts: { split?: boolean } = {},
): Audit {
  const all: LabelSet[] =
    sets.length > 1
      ? [
          ...sets,
          {
            name: "all sets together",
            labels: mergeSets(sets),
            loopStarts: Object.assign({}, ...sets.map((s) => s.loopStarts)),
          },
        ]
      : [...sets];
  return {
    split: Boolean(opts.split),
    sets: all.map((s) => auditSet(s, results, explained, thresholds, opts)),
  };
}
