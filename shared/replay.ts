// Offline replay: feeds stored sessions through the same forest the plugin
// and the watchdog use, and reports what each session would have received.
import { observationsFromMessages, type StoredMessage } from "./adapters/stored.ts";
import { SessionForest } from "./forest.ts";
import type { Policy } from "./policy.ts";
import { treesOf } from "./session-tree.ts";
import { type FlagReason, type Observation, VERDICT_RANK, type Verdict } from "./types.ts";

export interface ReplaySession {
  id: string;
  parentId: string | null;
  directory?: string | null;
  messages: readonly StoredMessage[];
}

export interface TimelineTick {
  /** 1-based index of the tool call in its session. */
  call: number;
  time: number;
  tool: string;
  landed: boolean;
  failed: boolean;
  verdict: Verdict;
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

/** The sessions' observations merged by time, so children roll up into parents in order. */
export function mergedObservations(sessions: readonly ReplaySession[], policy: Policy): Observation[] {
  const all = sessions.flatMap((s, si) =>
    observationsFromMessages({ id: s.id, parentId: s.parentId, directory: s.directory ?? null }, s.messages, {
      testPatterns: policy.testPatterns,
      continuationMarkers: policy.continuationMarkers,
    }).map((obs, i) => ({ obs, si, i })),
  );
  const timeOf = (o: Observation) => (o.kind === "tool" ? o.call.time : o.time);
  all.sort((a, b) => timeOf(a.obs) - timeOf(b.obs) || a.si - b.si || a.i - b.i);
  return all.map((x) => x.obs);
}

export function replay(
  sessions: readonly ReplaySession[],
  policy: Policy,
  opts: { timeline?: boolean } = {},
): ReplayResult[] {
  const results = new Map<string, ReplayResult>();
  for (const tree of treesOf(sessions)) {
    for (const r of replayTree(tree, policy, opts)) results.set(r.id, r);
  }
  return sessions.map((s) => results.get(s.id) as ReplayResult);
}

interface Acc {
  calls: number;
  landed: number;
  worst: Verdict;
  firstFlag: number | null;
  firstLoop: number | null;
  reason: FlagReason | null;
  fps: Set<string>;
  targets: Map<string, number>;
  timeline: TimelineTick[];
}

function replayTree(
  sessions: readonly ReplaySession[],
  policy: Policy,
  opts: { timeline?: boolean },
): ReplayResult[] {
  const forest = new SessionForest(policy, { maxSessions: Math.max(10_000, sessions.length * 2) });
  for (const s of sessions) forest.setParent(s.id, s.parentId);
  const acc = new Map<string, Acc>();
  const get = (id: string): Acc => {
    let a = acc.get(id);
    if (!a) {
      a = {
        calls: 0,
        landed: 0,
        worst: "ok",
        firstFlag: null,
        firstLoop: null,
        reason: null,
        fps: new Set(),
        targets: new Map(),
        timeline: [],
      };
      acc.set(id, a);
    }
    return a;
  };
  for (const s of sessions) get(s.id);
  for (const obs of mergedObservations(sessions, policy)) {
    const { event, changes } = forest.observe(obs);
    if (event) {
      const a = get(event.sessionId);
      a.calls++;
      if (event.landed) a.landed++;
      a.fps.add(event.fp);
      const label = `${event.tool} ${event.target}`;
      a.targets.set(label, (a.targets.get(label) ?? 0) + 1);
    }
    for (const c of changes) {
      const a = get(c.sessionId);
      if (VERDICT_RANK[c.verdict] > VERDICT_RANK[a.worst]) a.worst = c.verdict;
      if (c.verdict !== "ok" && a.firstFlag === null) {
        a.firstFlag = Math.max(a.calls, 1);
        a.reason = c.reason;
      }
      if (c.verdict === "looping" && a.firstLoop === null) a.firstLoop = Math.max(a.calls, 1);
    }
    if (event && opts.timeline) {
      const a = get(event.sessionId);
      a.timeline.push({
        call: a.calls,
        time: event.time,
        tool: event.tool,
        landed: event.landed,
        failed: event.failed,
        verdict: forest.get(event.sessionId)?.lastVerdict.verdict ?? "ok",
      });
    }
  }
  return sessions.map((s) => {
    const a = get(s.id);
    const t = forest.get(s.id);
    const sig = t?.signals();
    let top: [string, number] | null = null;
    for (const e of a.targets) if (!top || e[1] > top[1]) top = e;
    return {
      id: s.id,
      parent_id: s.parentId,
      agent: t?.agent ?? "unknown",
      calls: a.calls,
      landed: a.landed,
      verdict: t?.lastVerdict.verdict ?? "ok",
      worst: a.worst,
      first_flag_call: a.firstFlag,
      first_loop_call: a.firstLoop,
      reason: a.reason,
      top_target: top?.[0] ?? null,
      top_target_count: top?.[1] ?? 0,
      dup_share: a.calls ? Math.round((1 - a.fps.size / a.calls) * 1000) / 1000 : 0,
      compactions: sig?.compactions ?? 0,
      max_context_tokens: sig?.maxContextTokens ?? 0,
      turns: sig?.turns ?? 0,
      usd: Math.round((sig?.usdTotal ?? 0) * 10_000) / 10_000,
      timeline: a.timeline,
    };
  });
}
