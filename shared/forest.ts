// Many sessions at once, with children rolled up into their ancestors by
// parent id: a child's landed change, turns and spend count for every
// ancestor. Returns only verdict transitions, never a verdict per call.
import { type Policy, slugAgent } from "./policy.ts";
import { SessionTracker } from "./session-tracker.ts";
import { rootBy } from "./session-tree.ts";
import type { FlagReason, Observation, Signals, ToolEvent, Verdict } from "./types.ts";

export interface VerdictChange {
  sessionId: string;
  parentId: string | null;
  rootId: string;
  agent: string;
  previous: Verdict;
  verdict: Verdict;
  reason: FlagReason | null;
  signals: Signals;
  at: number;
}

export interface ObserveResult {
  /** The tool event, when the observation was a tool call. */
  event: ToolEvent | null;
  /** Empty (one shared, frozen array) for most observations. */
  changes: readonly VerdictChange[];
}

export interface ForestOptions {
  /** At most this many sessions are kept; the least recently active are evicted first. */
  maxSessions?: number;
}

const MAX_DEPTH = 32;
const NO_CHANGES: readonly VerdictChange[] = Object.freeze([]);
const NO_TRACKERS: readonly SessionTracker[] = Object.freeze([]);

export class SessionForest {
  private readonly trackers = new Map<string, SessionTracker>();
  private readonly parents = new Map<string, string | null>();
  private readonly maxSessions: number;

  constructor(
    private readonly policy: Policy,
    opts: ForestOptions = {},
  ) {
    this.maxSessions = opts.maxSessions ?? 10_000;
  }

  get size(): number {
    return this.trackers.size;
  }

  get(sessionId: string): SessionTracker | undefined {
    return this.trackers.get(sessionId);
  }

  ids(): string[] {
    return [...this.trackers.keys()];
  }

  /** Records a parent link (from session.created events or a session lookup). */
  setParent(sessionId: string, parentId: string | null): void {
    if (parentId === sessionId) return;
    this.parents.set(sessionId, parentId);
    const t = this.trackers.get(sessionId);
    if (t && parentId) t.parentId = parentId;
    if (this.parents.size > this.maxSessions * 4) {
      const oldest = this.parents.keys().next();
      if (!oldest.done) this.parents.delete(oldest.value);
    }
  }

  parentOf(sessionId: string): string | null {
    return this.parents.get(sessionId) ?? this.trackers.get(sessionId)?.parentId ?? null;
  }

  /** Ancestors nearest first, guarded against cycles. */
  ancestors(sessionId: string): string[] {
    const out: string[] = [];
    let cur = this.parentOf(sessionId);
    // A root (most observations) allocates no set.
    if (!cur) return out;
    const seen = new Set([sessionId]);
    while (cur && !seen.has(cur) && out.length < MAX_DEPTH) {
      out.push(cur);
      seen.add(cur);
      cur = this.parentOf(cur);
    }
    return out;
  }

  /** The tree root; a parent cycle is cut where shared/session-tree.ts cuts it. */
  rootOf(sessionId: string): string {
    return rootBy(sessionId, (id) => this.parentOf(id), MAX_DEPTH);
  }

  private tracker(sessionId: string, parentId: string | null, agent: string | undefined): SessionTracker {
    let t = this.trackers.get(sessionId);
    // Agents are compared and sent as slugs ("Sisyphus-Junior" -> "sisyphus-junior").
    const slug = agent ? slugAgent(agent) : "unknown";
    if (!t) {
      // Evict before inserting: a new tracker has no activity yet and would evict itself.
      if (this.trackers.size >= this.maxSessions) this.evictOldest();
      t = new SessionTracker(sessionId, parentId ?? this.parents.get(sessionId) ?? null, slug, this.policy);
      this.trackers.set(sessionId, t);
    }
    if (parentId && !t.parentId) t.parentId = parentId;
    if (parentId && !this.parents.has(sessionId)) this.setParent(sessionId, parentId);
    if (slug !== "unknown" && slug !== t.agent) t.agent = slug;
    return t;
  }

  private evictOldest(): void {
    let oldest: SessionTracker | null = null;
    for (const t of this.trackers.values()) if (!oldest || t.lastActivity < oldest.lastActivity) oldest = t;
    if (oldest) this.trackers.delete(oldest.id);
  }

  /** Drops sessions idle since before `cutoff`; returns their ids. */
  evictIdle(cutoff: number): string[] {
    const gone: string[] = [];
    for (const t of this.trackers.values()) {
      if (t.lastActivity < cutoff) {
        this.trackers.delete(t.id);
        gone.push(t.id);
      }
    }
    return gone;
  }

  private ancestorTrackers(sessionId: string): readonly SessionTracker[] {
    // a root (most observations) makes no list
    if (!this.parentOf(sessionId)) return NO_TRACKERS;
    const out: SessionTracker[] = [];
    for (const id of this.ancestors(sessionId)) {
      const t = this.trackers.get(id);
      if (t) out.push(t);
    }
    return out;
  }

  observe(obs: Observation): ObserveResult {
    let event: ToolEvent | null = null;
    let sessionId: string;
    let at: number;
    switch (obs.kind) {
      case "tool": {
        const t = this.tracker(obs.call.sessionId, obs.call.parentId, obs.call.agent);
        event = t.recordCall(obs.call);
        if (event.landed) for (const a of this.ancestorTrackers(t.id)) a.descendantLanded(event.time);
        sessionId = t.id;
        at = obs.call.time;
        break;
      }
      case "turn": {
        const t = this.tracker(obs.sessionId, obs.parentId, obs.agent);
        t.recordTurn(obs);
        for (const a of this.ancestorTrackers(t.id)) a.descendantTurn();
        sessionId = t.id;
        at = obs.time;
        break;
      }
      case "usage": {
        const t = this.tracker(obs.sessionId, null, undefined);
        if (t.recordUsage(obs)) {
          for (const a of this.ancestorTrackers(t.id)) a.descendantUsage(obs.costUsd, obs.promptTokens);
        }
        sessionId = t.id;
        at = obs.time;
        break;
      }
      case "user": {
        const t = this.tracker(obs.sessionId, obs.parentId, obs.agent);
        t.recordUser(obs);
        sessionId = t.id;
        at = obs.time;
        break;
      }
      case "compaction": {
        const t = this.tracker(obs.sessionId, null, undefined);
        t.recordCompaction(obs.time);
        sessionId = t.id;
        at = obs.time;
        break;
      }
    }
    return { event, changes: this.reevaluate(sessionId, at) };
  }

  /** Re-judges a session and its ancestors; returns the ones whose verdict changed. */
  reevaluate(sessionId: string, at: number): readonly VerdictChange[] {
    let changes: VerdictChange[] | null = null;
    const own = this.rejudge(sessionId, sessionId, at);
    if (own) changes = [own];
    if (this.parentOf(sessionId)) {
      for (const id of this.ancestors(sessionId)) {
        const c = this.rejudge(id, sessionId, at);
        if (c && changes) changes.push(c);
        else if (c) changes = [c];
      }
    }
    return changes ?? NO_CHANGES;
  }

  /** Re-judges one session; returns its change, if any (its root found only then: this runs per observation). */
  private rejudge(id: string, observed: string, at: number): VerdictChange | null {
    const t = this.trackers.get(id);
    // Unchanged since judged (an ancestor of a session that only made a call): the verdict stands.
    if (!t?.changedSinceJudged) return null;
    const j = t.evaluate(t.signalsToJudge());
    const previous = t.lastVerdict.verdict;
    t.lastVerdict = j;
    if (j.verdict === previous) return null;
    return {
      sessionId: id,
      parentId: this.parentOf(id),
      rootId: this.rootOf(observed),
      agent: t.agent,
      previous,
      verdict: j.verdict,
      reason: j.reason,
      // a copy to keep: the judged one is reused
      signals: t.signals(),
      at,
    };
  }
}
