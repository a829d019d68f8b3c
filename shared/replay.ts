// Offline replay: feeds stored sessions through the same forest the plugin
// and the watchdog use, and reports what each session would have received.
// One loop (runTree) serves the replay, the threshold sweep and the watchdog.
import {
  observationsFromMessages,
  observeOptions,
  type StoredMessage,
  type StoredOptions,
} from "./adapters/stored.ts";
import { type ObserveResult, SessionForest } from "./forest.ts";
import type { Policy } from "./policy.ts";
import { type Linked, treesOf } from "./session-tree.ts";
import { type FlagReason, type Observation, VERDICT_RANK, type Verdict } from "./types.ts";

export interface ReplaySession {
  id: string;
  parentId: string | null;
  directory?: string | null;
  messages: readonly StoredMessage[];
  /**
   * The session's observations when its loader made them as it read
   * (calibrate's opencode.db reader keeps no stored records), with the
   * options they were made with; `messages` is then not read.
   */
  observed?: { observations: readonly Observation[]; opts: StoredOptions };
}

export interface TimelineTick {
  /** 1-based index of the tool call in its session. */
  call: number;
  time: number;
  tool: string;
  landed: boolean;
  failed: boolean;
  verdict: Verdict;
  /** The rule behind the verdict (null while ok). */
  reason: FlagReason | null;
}

export interface ReplayResult {
  id: string;
  parent_id: string | null;
  agent: string;
  calls: number;
  landed: number;
  verdict: Verdict;
  worst: Verdict;
  first_flag_call: number | null;
  first_loop_call: number | null;
  reason: FlagReason | null;
  /** The session's most called "tool target" over the replay (calibrate's JSON key; not the wire's top_target). */
  top_target: string | null;
  top_target_count: number;
  dup_share: number;
  compactions: number;
  max_context_tokens: number;
  turns: number;
  usd: number;
  timeline: TimelineTick[];
}

/**
 * Trees never affect each other's verdicts (roll-up runs along parent links
 * only), so each is replayed on its own forest: the live state stays one
 * tree's, not the whole history's.
 */
export { treesOf } from "./session-tree.ts";

/**
 * The sessions' observations merged by time, so children roll up into parents
 * in order; equal times keep input order (session, then position). Sessions
 * are concatenated in input order and sorted stably by time alone, which is
 * that order, and a list already in time order (one session, mostly) is not
 * sorted at all.
 */
export function mergedObservations(
  sessions: readonly ReplaySession[],
  policy: Policy,
): readonly Observation[] {
  const opts = observeOptions(policy);
  // A loader's observations are shared (a sweep replays them many times): copied before merging or sorting.
  const lists = sessions.map((s) => sessionObservations(s, opts));
  const only = lists.length === 1 ? (lists[0] as readonly Observation[]) : null;
  if (only && inTimeOrder(only)) return only;
  const all: Observation[] = [];
  for (const list of lists) for (const o of list) all.push(o);
  if (!inTimeOrder(all)) all.sort((a, b) => timeOf(a) - timeOf(b));
  return all;
}

function sessionObservations(s: ReplaySession, opts: StoredOptions): readonly Observation[] {
  if (s.observed) {
    // Made with other test patterns or markers they would judge another way: a caller's mistake, said.
    if (!sameOptions(s.observed.opts, opts))
      throw new Error(`session ${s.id} was read with other test patterns or continuation markers`);
    return s.observed.observations;
  }
  return observationsFromMessages(
    { id: s.id, parentId: s.parentId, directory: s.directory ?? null },
    s.messages,
    opts,
  );
}

function sameOptions(a: StoredOptions, b: StoredOptions): boolean {
  if (a === b) return true;
  const same = <T>(x: readonly T[], y: readonly T[], eq: (p: T, q: T) => boolean) =>
    x === y || (x.length === y.length && x.every((v, i) => eq(v, y[i] as T)));
  return (
    same(a.testPatterns, b.testPatterns, (p, q) => p.source === q.source && p.flags === q.flags) &&
    same(a.continuationMarkers, b.continuationMarkers, (p, q) => p === q)
  );
}

function inTimeOrder(list: readonly Observation[]): boolean {
  for (let i = 1; i < list.length; i++)
    if (timeOf(list[i] as Observation) < timeOf(list[i - 1] as Observation)) return false;
  return true;
}

function timeOf(o: Observation): number {
  return o.kind === "tool" ? o.call.time : o.time;
}

/** One tree ready to run: its sessions and their observations merged by time. */
export interface PreparedTree {
  sessions: readonly Linked[];
  observations: readonly Observation[];
}

/** Every tree prepared, plus the sessions in input order. */
export interface Prepared {
  sessions: readonly Linked[];
  trees: readonly PreparedTree[];
}

/**
 * Converts stored messages once (hashing, parsing commands: the costly part).
 * Observations do not depend on thresholds, so a sweep runs them many times.
 */
export function prepareTree(tree: readonly ReplaySession[], policy: Policy): PreparedTree {
  return {
    sessions: tree.map((s) => ({ id: s.id, parentId: s.parentId })),
    observations: mergedObservations(tree, policy),
  };
}

export function prepare(sessions: readonly ReplaySession[], policy: Policy): Prepared {
  return {
    sessions: sessions.map((s) => ({ id: s.id, parentId: s.parentId })),
    trees: treesOf(sessions).map((tree) => prepareTree(tree, policy)),
  };
}

/** Runs one prepared tree through a fresh forest, handing every step to `observe`; returns the forest. */
export function runTree(
  tree: PreparedTree,
  policy: Policy,
  observe?: (step: ObserveResult, forest: SessionForest) => void,
): SessionForest {
  const forest = new SessionForest(policy, { maxSessions: Math.max(10_000, tree.sessions.length * 2) });
  for (const s of tree.sessions) forest.setParent(s.id, s.parentId);
  for (const obs of tree.observations) {
    const step = forest.observe(obs);
    observe?.(step, forest);
  }
  return forest;
}

/** What a replay tells about one session: calls, landed changes, the worst verdict and when it came. */
export interface SessionTally {
  calls: number;
  landed: number;
  worst: Verdict;
  /** 1-based call index of the first flag and of the first loop. */
  firstFlag: number | null;
  firstLoop: number | null;
  reason: FlagReason | null;
}

/** Counts one step into per-session tallies. */
export function tallyStep(out: Map<string, SessionTally>, step: ObserveResult): void {
  if (step.event) {
    const o = tallyOf(out, step.event.sessionId);
    o.calls++;
    if (step.event.landed) o.landed++;
  }
  for (const c of step.changes) {
    const o = tallyOf(out, c.sessionId);
    if (VERDICT_RANK[c.verdict] > VERDICT_RANK[o.worst]) o.worst = c.verdict;
    if (c.verdict !== "ok" && o.firstFlag === null) {
      o.firstFlag = Math.max(o.calls, 1);
      o.reason = c.reason;
    }
    if (c.verdict === "looping" && o.firstLoop === null) o.firstLoop = Math.max(o.calls, 1);
  }
}

export function tallyOf(out: Map<string, SessionTally>, id: string): SessionTally {
  let o = out.get(id);
  if (!o) {
    o = { calls: 0, landed: 0, worst: "ok", firstFlag: null, firstLoop: null, reason: null };
    out.set(id, o);
  }
  return o;
}

export function replay(
  sessions: readonly ReplaySession[],
  policy: Policy,
  opts: { timeline?: boolean } = {},
): ReplayResult[] {
  const results = new Map<string, ReplayResult>();
  // Tree by tree, so only one tree's observations are held at a time.
  for (const tree of treesOf(sessions)) {
    for (const r of replayTree(prepareTree(tree, policy), policy, opts)) results.set(r.id, r);
  }
  return sessions.map((s) => results.get(s.id) as ReplayResult);
}

/** A "tool target" label's count over the replay, in first-seen order. */
interface TargetCount {
  label: string;
  count: number;
}

interface Seen {
  tally: SessionTally;
  fps: Set<string>;
  /** Per label (distinct tool and target pairs may share one); byPair finds it without building the label per call. */
  targets: Map<string, TargetCount>;
  byPair: Map<string, Map<string, TargetCount>>;
  timeline: TimelineTick[];
}

/** Counts one call's "tool target" label. */
function countTarget(s: Seen, tool: string, target: string): void {
  let byTarget = s.byPair.get(tool);
  if (!byTarget) {
    byTarget = new Map();
    s.byPair.set(tool, byTarget);
  }
  let t = byTarget.get(target);
  if (!t) {
    const label = `${tool} ${target}`;
    t = s.targets.get(label);
    if (!t) {
      t = { label, count: 0 };
      s.targets.set(label, t);
    }
    byTarget.set(target, t);
  }
  t.count++;
}

function replayTree(tree: PreparedTree, policy: Policy, opts: { timeline?: boolean }): ReplayResult[] {
  const tallies = new Map<string, SessionTally>();
  const seen = new Map<string, Seen>();
  // Most observations follow one of the same session: the last one found is asked first.
  let last: Seen | null = null;
  let lastId = "";
  const seenIn = (id: string): Seen => {
    if (last && lastId === id) return last;
    let s = seen.get(id);
    if (!s) {
      s = {
        tally: tallyOf(tallies, id),
        fps: new Set(),
        targets: new Map(),
        byPair: new Map(),
        timeline: [],
      };
      seen.set(id, s);
    }
    last = s;
    lastId = id;
    return s;
  };
  const forest = runTree(tree, policy, (step, f) => {
    tallyStep(tallies, step);
    const event = step.event;
    if (!event) return;
    const s = seenIn(event.sessionId);
    s.fps.add(event.fp);
    countTarget(s, event.tool, event.target);
    if (opts.timeline) {
      const verdict = f.get(event.sessionId)?.lastVerdict;
      s.timeline.push({
        call: s.tally.calls,
        time: event.time,
        tool: event.tool,
        landed: event.landed,
        failed: event.failed,
        verdict: verdict?.verdict ?? "ok",
        reason: verdict?.reason ?? null,
      });
    }
  });
  return tree.sessions.map((s) => {
    const x = seenIn(s.id);
    const o = x.tally;
    const t = forest.get(s.id);
    const sig = t?.signals();
    let top: TargetCount | null = null;
    for (const e of x.targets.values()) if (!top || e.count > top.count) top = e;
    return {
      id: s.id,
      parent_id: s.parentId,
      agent: t?.agent ?? "unknown",
      calls: o.calls,
      landed: o.landed,
      verdict: t?.lastVerdict.verdict ?? "ok",
      worst: o.worst,
      first_flag_call: o.firstFlag,
      first_loop_call: o.firstLoop,
      reason: o.reason,
      top_target: top?.label ?? null,
      top_target_count: top?.count ?? 0,
      dup_share: o.calls ? Math.round((1 - x.fps.size / o.calls) * 1000) / 1000 : 0,
      compactions: sig?.compactions ?? 0,
      max_context_tokens: sig?.maxContextTokens ?? 0,
      turns: sig?.turns ?? 0,
      usd: Math.round((sig?.usdTotal ?? 0) * 10_000) / 10_000,
      timeline: x.timeline,
    };
  });
}
