// What the gate decides on, held in memory so a model request never waits on
// the database: the refusals in force, each session's root, the modes'
// context caps and each session's last measured context. The store loads
// them at start (reload) and feeds every change a write makes (apply); the
// gate's own learning (a parent link from the headers) and its request
// records update them at once and reach the database later, in batches.
//
// apply() takes changes from any writer, not only this process: a replica
// of the router on a shared PostgreSQL would turn LISTEN/NOTIFY payloads of
// the same shape into apply() calls, and call reload() after it reconnects
// (a missed notification is then repaired by the full read).
import type { RefusalScope } from "../api/schemas.ts";
import type { RefusalChange } from "../db/tables/refusals.ts";
import { type GateFactsView, type StoppedRefusal, usableSessionId } from "../modes/gate-decision.ts";
import type { GateIdentity, RequestRecord } from "./types.ts";

/** One change to the facts, as a write makes it. */
export type GateFactChange =
  /** A refusal set (stopped) or lifted (running), as the refusals table logs it. */
  | ({ kind: "refusal" } & RefusalChange)
  /** The session is filed under rootId; sessions filed under the session move with it. */
  | { kind: "root"; sessionId: string; rootId: string }
  /** The tree's context cap; null removes it. */
  | { kind: "cap"; rootId: string; cap: number | null }
  /** A request record: its measured context, or (agent compaction) the compaction that resets it. */
  | {
      kind: "request";
      sessionId: string;
      agent: string | null;
      startedAt: number;
      contextTokens: number | null;
      refused: boolean;
    };

/** Everything the facts hold, as a store reads it in one go. */
export interface GateFactsSnapshot {
  refusals: Array<{ scope: RefusalScope; key: string } & StoppedRefusal>;
  roots: Array<{ sessionId: string; rootId: string }>;
  caps: Array<{ rootId: string; cap: number }>;
  /** Per session: the last measured context since its last compaction (tokens null: none since). */
  contexts: Array<{ sessionId: string; tokens: number | null; at: number; compactedAt: number }>;
}

interface Context {
  tokens: number | null;
  /** When the measured request started. */
  at: number;
  /** When the session's latest compaction request started (-1: never). */
  compactedAt: number;
}

export class GateFacts implements GateFactsView {
  private readonly stopped: Record<RefusalScope, Map<string, StoppedRefusal>> = {
    session: new Map(),
    tree: new Map(),
  };
  private readonly roots = new Map<string, string>();
  /** root -> the sessions filed under it, for moving a subtree in one step. */
  private readonly members = new Map<string, Set<string>>();
  private readonly caps = new Map<string, number>();
  private readonly contexts = new Map<string, Context>();

  refusal(scope: RefusalScope, key: string): StoppedRefusal | undefined {
    return this.stopped[scope].get(key);
  }
  rootOf(sessionId: string): string | undefined {
    return this.roots.get(sessionId);
  }
  cap(rootId: string): number | undefined {
    return this.caps.get(rootId);
  }
  lastContext(sessionId: string): number | undefined {
    return this.contexts.get(sessionId)?.tokens ?? undefined;
  }

  /** Sizes, for /metrics and the benches. */
  size(): { sessions: number; refusals: number; caps: number } {
    return {
      sessions: this.roots.size,
      refusals: this.stopped.session.size + this.stopped.tree.size,
      caps: this.caps.size,
    };
  }

  /**
   * The gate's own learning from a request's headers, by the store's rule: a
   * parent header files the session under the parent's root; otherwise a
   * known session keeps its root and a new one is its own.
   */
  learn(identity: GateIdentity): void {
    const s = identity.sessionId;
    if (!usableSessionId(s)) return;
    const parent = identity.parent && identity.parent !== s ? identity.parent : null;
    const rootId =
      (parent === null ? undefined : (this.roots.get(parent) ?? parent)) ?? this.roots.get(s) ?? s;
    this.apply({ kind: "root", sessionId: s, rootId });
  }

  /** A request's record: its measured context (or the compaction that resets it). */
  observe(r: RequestRecord): void {
    if (r.session_id === null) return;
    this.apply({
      kind: "request",
      sessionId: r.session_id,
      agent: r.agent,
      startedAt: r.started_at,
      contextTokens: r.context_tokens,
      refused: r.refused,
    });
  }

  apply(change: GateFactChange): void {
    if (change.kind === "refusal") {
      const map = this.stopped[change.scope];
      if (change.state === "stopped")
        map.set(change.key, { by: change.by, at: change.at, reason: change.reason });
      else map.delete(change.key);
    } else if (change.kind === "root") this.file(change.sessionId, change.rootId);
    else if (change.kind === "cap") {
      if (change.cap === null) this.caps.delete(change.rootId);
      else this.caps.set(change.rootId, change.cap);
    } else this.measure(change);
  }

  /** Replaces everything with what a store read (start, after a prune, after a reconnect). */
  reload(snapshot: GateFactsSnapshot): void {
    this.stopped.session.clear();
    this.stopped.tree.clear();
    this.roots.clear();
    this.members.clear();
    this.caps.clear();
    this.contexts.clear();
    for (const r of snapshot.refusals)
      this.stopped[r.scope].set(r.key, { by: r.by, at: r.at, reason: r.reason });
    for (const r of snapshot.roots) this.place(r.sessionId, r.rootId);
    for (const c of snapshot.caps) this.caps.set(c.rootId, c.cap);
    for (const c of snapshot.contexts)
      this.contexts.set(c.sessionId, { tokens: c.tokens, at: c.at, compactedAt: c.compactedAt });
  }

  /**
   * Files a session under a root the way the store's sessions table does:
   * when the root changes to another session, everything filed under this
   * session moves along, so a tree learnt bottom-up ends up under one root.
   */
  private file(sessionId: string, rootId: string): void {
    const before = this.roots.get(sessionId);
    if (before === rootId) return;
    this.place(sessionId, rootId);
    if (rootId === sessionId) return;
    const under = this.members.get(sessionId);
    if (!under) return;
    for (const m of [...under]) if (m !== sessionId) this.place(m, rootId);
  }

  private place(sessionId: string, rootId: string): void {
    const before = this.roots.get(sessionId);
    if (before !== undefined) this.members.get(before)?.delete(sessionId);
    if (before !== undefined && this.members.get(before)?.size === 0) this.members.delete(before);
    this.roots.set(sessionId, rootId);
    let set = this.members.get(rootId);
    if (!set) {
      set = new Set();
      this.members.set(rootId, set);
    }
    set.add(sessionId);
  }

  /** The store's lastContext rule: the latest measured, non-refused request started after the last compaction. */
  private measure(r: Extract<GateFactChange, { kind: "request" }>): void {
    const c = this.contexts.get(r.sessionId) ?? { tokens: null, at: -1, compactedAt: -1 };
    if (r.agent === "compaction") {
      c.compactedAt = Math.max(c.compactedAt, r.startedAt);
      if (c.tokens !== null && c.at <= c.compactedAt) c.tokens = null;
    } else {
      if (r.refused || r.contextTokens === null || r.startedAt <= c.compactedAt) return;
      if (c.tokens !== null && r.startedAt < c.at) return;
      c.tokens = r.contextTokens;
      c.at = r.startedAt;
    }
    this.contexts.set(r.sessionId, c);
  }
}
