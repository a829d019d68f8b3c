// Why a session was flagged, or why a labelled loop was not: the signal values
// behind the first flag, or the closest each rule came. Replays only the trees
// of the sessions asked about (the audit's false flags and missed loops).
import {
  type CycleInfo,
  type FlagReason,
  mergedObservations,
  type Policy,
  type RepeatInfo,
  type ReplaySession,
  type RetraceInfo,
  type RowInfo,
  SessionForest,
  type Signals,
  sinceLanded,
  type Thresholds,
  treesOf,
  type Verdict,
} from "../../shared/index.ts";

/** The signal values the rules read, copied out of one moment. */
export interface Snapshot {
  readOnly: boolean;
  /** Turns since landed, or calls when the source has no turns (as the judge counts). */
  since: number;
  sinceUnit: "turns" | "calls";
  usdSinceLanded: number;
  failStreak: number;
  failTarget: string | null;
  flipFlops: number;
  topSame: RepeatInfo | null;
  cumRepeat: RepeatInfo | null;
  cycle: CycleInfo | null;
  inARow: RowInfo | null;
  retrace: RetraceInfo | null;
  windowSize: number;
  repeatShare: number;
  injectedSinceLanded: number;
  novelty: number;
  callsSinceNovel: number;
}

export interface FirstFlag {
  /** 1-based tool call index, as the replay counts it. */
  call: number;
  verdict: Verdict;
  reason: FlagReason | null;
  signals: Snapshot;
}

/** The highest value each rule's signal reached; the repetition ones only while the stall condition held. */
export interface Peaks {
  readOnly: boolean;
  since: number;
  sinceUnit: "turns" | "calls";
  /** Moments at which the stall condition (stall_turns or stall_usd) held. */
  stalledMoments: number;
  failStreak: number;
  flipFlops: number;
  topSame: RepeatInfo | null;
  cycle: CycleInfo | null;
  inARow: RowInfo | null;
  retrace: RetraceInfo | null;
  repeatShare: number;
  injectedSinceLanded: number;
  cumRepeat: RepeatInfo | null;
  /** Lowest novelty over a full window (read-only agents), null when the window never filled. */
  lowestNovelty: number | null;
}

export interface Explanation {
  id: string;
  calls: number;
  first: FirstFlag | null;
  peaks: Peaks;
}

function snapshot(s: Signals): Snapshot {
  const copy = (r: RepeatInfo | null) => (r ? { tool: r.tool, target: r.target, count: r.count } : null);
  return {
    readOnly: s.readOnly,
    since: sinceLanded(s),
    sinceUnit: s.turns > 0 ? "turns" : "calls",
    usdSinceLanded: s.usdSinceLanded,
    failStreak: s.failStreak,
    failTarget: s.failTarget,
    flipFlops: s.flipFlops,
    topSame: copy(s.topSame),
    cumRepeat: copy(s.cumRepeat),
    cycle: s.cycle ? { ...s.cycle } : null,
    inARow: s.inARow ? { ...s.inARow } : null,
    retrace: s.retrace ? { ...s.retrace } : null,
    windowSize: s.windowSize,
    repeatShare: s.repeatShare,
    injectedSinceLanded: s.injectedSinceLanded,
    novelty: s.novelty,
    callsSinceNovel: s.callsSinceNovel,
  };
}

/** Peaks before the first call. */
export function noPeaks(): Peaks {
  return {
    readOnly: false,
    since: 0,
    sinceUnit: "turns",
    stalledMoments: 0,
    failStreak: 0,
    flipFlops: 0,
    topSame: null,
    cycle: null,
    inARow: null,
    retrace: null,
    repeatShare: 0,
    injectedSinceLanded: 0,
    cumRepeat: null,
    lowestNovelty: null,
  };
}

const higher = (a: RepeatInfo | null, b: RepeatInfo | null) => (b && (!a || b.count > a.count) ? b : a);

function addPeak(p: Peaks, s: Snapshot, t: Thresholds): void {
  p.readOnly = s.readOnly;
  p.sinceUnit = s.sinceUnit;
  p.since = Math.max(p.since, s.since);
  p.cumRepeat = higher(p.cumRepeat, s.cumRepeat);
  if (s.readOnly && s.windowSize >= t.window)
    p.lowestNovelty = p.lowestNovelty === null ? s.novelty : Math.min(p.lowestNovelty, s.novelty);
  const stalled = s.since >= t.stall_turns || (t.stall_usd > 0 && s.usdSinceLanded >= t.stall_usd);
  // Read-only agents are judged without the stall condition.
  if (!stalled && !s.readOnly) return;
  if (s.retrace && (!p.retrace || s.retrace.distinct > p.retrace.distinct)) p.retrace = { ...s.retrace };
  p.stalledMoments++;
  p.failStreak = Math.max(p.failStreak, s.failStreak);
  p.flipFlops = Math.max(p.flipFlops, s.flipFlops);
  p.topSame = higher(p.topSame, s.topSame);
  if (s.cycle && (!p.cycle || s.cycle.reps > p.cycle.reps)) p.cycle = { ...s.cycle };
  if (s.inARow && (!p.inARow || s.inARow.repeats > p.inARow.repeats)) p.inARow = { ...s.inARow };
  if (s.windowSize >= t.min_calls) p.repeatShare = Math.max(p.repeatShare, s.repeatShare);
  p.injectedSinceLanded = Math.max(p.injectedSinceLanded, s.injectedSinceLanded);
}

/** Replays the trees holding `ids` and explains each of those sessions. */
export function explainSessions(
  sessions: readonly ReplaySession[],
  policy: Policy,
  ids: ReadonlySet<string>,
): Map<string, Explanation> {
  const out = new Map<string, Explanation>();
  for (const tree of treesOf(sessions)) {
    const watched = tree.filter((s) => ids.has(s.id)).map((s) => s.id);
    if (!watched.length) continue;
    for (const id of watched) {
      out.set(id, { id, calls: 0, first: null, peaks: noPeaks() });
    }
    const forest = new SessionForest(policy, { maxSessions: Math.max(10_000, tree.length * 2) });
    for (const s of tree) forest.setParent(s.id, s.parentId);
    for (const obs of mergedObservations(tree, policy)) {
      const { event, changes } = forest.observe(obs);
      const x = event ? out.get(event.sessionId) : undefined;
      if (x) x.calls++;
      for (const c of changes) {
        const e = out.get(c.sessionId);
        if (e && !e.first && c.verdict !== "ok")
          e.first = {
            call: Math.max(e.calls, 1),
            verdict: c.verdict,
            reason: c.reason,
            signals: snapshot(c.signals),
          };
      }
      for (const id of watched) {
        const t = forest.get(id);
        const e = out.get(id) as Explanation;
        if (t && !e.first) addPeak(e.peaks, snapshot(t.signals()), policy.thresholds);
      }
    }
  }
  return out;
}

const fmtShare = (v: number) => v.toFixed(2);
const repeatText = (r: RepeatInfo) => `${r.tool} ${r.target} x${r.count}`;
const cycleText = (c: CycleInfo) =>
  `${c.period} calls going round (one: ${c.tool} ${c.target}) x${c.reps} turns`;
const rowText = (r: RowInfo) =>
  `${r.period === 1 ? `${r.tool} ${r.target}` : `2 calls in turn (one: ${r.tool} ${r.target})`} repeated ${r.repeats} times in a row`;
const retraceText = (r: RetraceInfo) =>
  `${r.distinct} different calls redone in order, period ${r.period} (latest: ${r.tool} ${r.target})`;

/** The rule and the values behind a flag, e.g. "repeat_target: read src/x.py x6 same result (top_warn 6), ...". */
export function describeFlag(f: FirstFlag, t: Thresholds): string {
  const s = f.signals;
  const loop = f.verdict === "looping";
  const k = <W extends keyof Thresholds, L extends keyof Thresholds>(warn: W, looping: L) =>
    loop ? `${looping} ${t[looping]}` : `${warn} ${t[warn]}`;
  const stall = () => {
    const turns = loop ? t.loop_turns : t.stall_turns;
    if (s.since >= turns) return `${s.since} ${s.sinceUnit} since landed (${k("stall_turns", "loop_turns")})`;
    return `$${s.usdSinceLanded.toFixed(2)} since landed (${k("stall_usd", "loop_usd")})`;
  };
  switch (f.reason) {
    case "fail_streak":
      return `fail_streak: ${s.failTarget ?? "one call"} failed ${s.failStreak} times in a row (${k("fail_warn", "fail_loop")}), ${stall()}`;
    case "read_only_failures":
      return `read_only_failures: ${s.failTarget ?? "one call"} failed ${s.failStreak} times in a row (${k("fail_warn", "fail_loop")})`;
    case "flip_flop":
      return `flip_flop: ${s.flipFlops} changes that repeat or undo an earlier one (${k("flip_warn", "flip_loop")}), ${stall()}`;
    case "repeat_target":
      return `repeat_target: ${s.topSame ? repeatText(s.topSame) : "?"} same result (${k("top_warn", "top_loop")}), ${stall()}`;
    case "in_a_row":
      return `in_a_row: ${s.inARow ? rowText(s.inARow) : "?"} (${k("row_warn", "row_loop")}), ${stall()}`;
    case "cycle":
      return `cycle: ${s.cycle ? cycleText(s.cycle) : "?"} (${k("cycle_warn", "cycle_loop")}), ${stall()}`;
    case "retrace":
      return s.readOnly
        ? `retrace: ${s.retrace ? retraceText(s.retrace) : "?"} (read-only agents: retrace_loop ${t.retrace_loop})`
        : `retrace: ${s.retrace ? retraceText(s.retrace) : "?"} (${k("retrace_warn", "retrace_loop")}), ${stall()}`;
    case "read_only_repeat":
      return `read_only_repeat: ${s.topSame ? repeatText(s.topSame) : "?"} same result (${k("top_ro_warn", "top_ro_loop")})`;
    case "duplicates":
      return `duplicates: repeat share ${fmtShare(s.repeatShare)} of ${s.windowSize} calls (${k("dup_warn", "dup_loop")}), ${stall()}`;
    case "continuations":
      return `continuations: ${s.injectedSinceLanded} injected continuation turns (continuation_warn ${t.continuation_warn}), ${stall()}`;
    case "whole_session":
      return `whole_session: ${s.cumRepeat ? repeatText(s.cumRepeat) : "?"} same result since the last landing (${k("cum_warn", "cum_loop")})`;
    case "ceiling":
      return s.readOnly
        ? `ceiling: ${s.callsSinceNovel} calls without a new target (ceiling_turns ${t.ceiling_turns})`
        : s.since >= t.ceiling_turns
          ? `ceiling: ${s.since} ${s.sinceUnit} since landed (ceiling_turns ${t.ceiling_turns})`
          : `ceiling: $${s.usdSinceLanded.toFixed(2)} since landed (ceiling_usd ${t.ceiling_usd})`;
    case "read_only_novelty":
      return `read_only_novelty: novelty ${fmtShare(s.novelty)} over a full window (novelty_ro_warn ${t.novelty_ro_warn})`;
    default:
      return `${f.verdict}: no reason recorded`;
  }
}

/** How close each rule came on a session never flagged. */
export function describeMiss(p: Peaks, t: Thresholds): string {
  const cum = `whole-session repeat ${p.cumRepeat ? repeatText(p.cumRepeat) : "none"} (cum_warn ${t.cum_warn})`;
  const top = (name: keyof Thresholds) =>
    `same-result repeat ${p.topSame ? repeatText(p.topSame) : "none"} (${name} ${t[name]})`;
  const fail = `fail streak ${p.failStreak} (fail_warn ${t.fail_warn})`;
  if (p.readOnly) {
    const novelty =
      p.lowestNovelty === null
        ? "the window never filled"
        : `lowest novelty ${fmtShare(p.lowestNovelty)} (novelty_ro_warn ${t.novelty_ro_warn})`;
    const retrace = `retrace ${p.retrace ? retraceText(p.retrace) : "none"} (retrace_loop ${t.retrace_loop})`;
    return `read-only agent, peaks: ${top("top_ro_warn")}, ${fail}, ${retrace}, ${novelty}; ${cum}`;
  }
  const since = `at most ${p.since} ${p.sinceUnit} since landed (stall_turns ${t.stall_turns})`;
  if (!p.stalledMoments) return `never stalled: ${since}; ${cum}`;
  return [
    `${since}; while stalled, peaks: ${top("top_warn")}`,
    fail,
    `flip-flops ${p.flipFlops} (flip_warn ${t.flip_warn})`,
    `repeat share ${fmtShare(p.repeatShare)} (dup_warn ${t.dup_warn}, judged from ${t.min_calls} calls)`,
    `in a row ${p.inARow ? rowText(p.inARow) : "none"} (row_warn ${t.row_warn})`,
    `cycle ${p.cycle ? cycleText(p.cycle) : "none"} (cycle_warn ${t.cycle_warn})`,
    `retrace ${p.retrace ? retraceText(p.retrace) : "none"} (retrace_warn ${t.retrace_warn})`,
    `continuations ${p.injectedSinceLanded} (continuation_warn ${t.continuation_warn})`,
  ]
    .join(", ")
    .concat(`; ${cum}`);
}
