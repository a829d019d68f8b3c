// Who a session is: its agent (slugged) and its parent session, for the
// X-Router-* headers and for rolling children up into their root. Parents come
// from session.created / session.updated events; a session never seen there
// is looked up once through the opencode client, and a slow lookup never
// holds a request up for more than a short budget.

import { BoundedMap, slugAgent } from "../shared/index.ts";

export interface IdentityHeadersInput {
  sessionId: string;
  agent: string;
  parentId: string | null | undefined;
  version: string;
}

/** The headers set on every LLM request. X-Router-Parent only for sub-agent sessions. */
export function identityHeaders(i: IdentityHeadersInput): Record<string, string> {
  const h: Record<string, string> = {
    "X-Router-Conversation": i.sessionId,
    "X-Router-Agent": slugAgent(i.agent),
    "X-Stallguard-Plugin": i.version,
  };
  if (i.parentId) h["X-Router-Parent"] = i.parentId;
  return h;
}

/**
 * Where this plugin reports, for the gate (it tells "headers seen" from
 * "reporting" by them): the plugin process, its router URL and whether its
 * last delivery failed. No content. The gate does not pass them upstream.
 */
export function reportHeaders(r: { instanceId: string; url: string; state: string }): Record<string, string> {
  return {
    "X-Stallguard-Instance": r.instanceId,
    "X-Stallguard-Report-To": r.url,
    "X-Stallguard-Report-State": r.state,
  };
}

/** Resolves a session's parent id (null: a root session); throws or rejects when unknown. */
export type ParentLookup = (sessionId: string) => Promise<string | null>;

export interface IdentityOptions {
  capacity: number;
  lookup?: ParentLookup;
  /** How long chat.headers waits for a lookup before sending without X-Router-Parent. */
  lookupBudgetMs?: number;
  /** After a failed lookup, do not ask again for this long. */
  retryAfterMs?: number;
  now?: () => number;
  onParent?: (sessionId: string, parentId: string | null) => void;
}

export class IdentityCache {
  private readonly agents: BoundedMap<string, string>;
  private readonly parents: BoundedMap<string, string | null>;
  private readonly inflight = new Map<string, Promise<string | null | undefined>>();
  private readonly failedAt: BoundedMap<string, number>;
  private readonly capacity: number;
  private readonly budget: number;
  private readonly retryAfter: number;
  private readonly now: () => number;

  constructor(private readonly opts: IdentityOptions) {
    this.capacity = Math.max(16, opts.capacity);
    this.agents = new BoundedMap(this.capacity);
    this.parents = new BoundedMap(this.capacity);
    this.failedAt = new BoundedMap(this.capacity);
    this.budget = opts.lookupBudgetMs ?? 250;
    this.retryAfter = opts.retryAfterMs ?? 30_000;
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return Math.max(this.agents.size, this.parents.size);
  }

  setAgent(sessionId: string, agent: string | undefined): void {
    if (!agent) return;
    const slug = slugAgent(agent);
    if (slug === "unknown" || this.agents.get(sessionId) === slug) return;
    this.agents.set(sessionId, slug);
  }

  agentOf(sessionId: string): string {
    return this.agents.get(sessionId) ?? "unknown";
  }

  setParent(sessionId: string, parentId: string | null): void {
    const p = parentId === sessionId ? null : parentId;
    const known = this.parents.get(sessionId);
    if (known !== undefined && (known === p || p === null)) return;
    this.parents.set(sessionId, p);
    this.failedAt.delete(sessionId);
    this.opts.onParent?.(sessionId, p);
  }

  /** The parent if known: a session id, null for a root, undefined when not known yet. */
  parentOf(sessionId: string): string | null | undefined {
    return this.parents.get(sessionId);
  }

  forget(sessionId: string): void {
    this.agents.delete(sessionId);
    this.parents.delete(sessionId);
    this.failedAt.delete(sessionId);
  }

  /**
   * The parent, looked up when not known. Waits at most the lookup budget; a
   * lookup still running after that fills the cache for the next request.
   */
  async resolveParent(sessionId: string): Promise<string | null | undefined> {
    const known = this.parents.get(sessionId);
    if (known !== undefined || !this.opts.lookup) return known;
    const failed = this.failedAt.get(sessionId);
    if (failed !== undefined && this.now() - failed < this.retryAfter) return undefined;
    let pending = this.inflight.get(sessionId);
    if (!pending) {
      pending = this.startLookup(sessionId, this.opts.lookup);
      this.inflight.set(sessionId, pending);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const budget = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), this.budget);
    });
    try {
      return await Promise.race([pending, budget]);
    } finally {
      clearTimeout(timer);
    }
  }

  private async startLookup(sessionId: string, lookup: ParentLookup): Promise<string | null | undefined> {
    try {
      const parent = await lookup(sessionId);
      this.setParent(sessionId, parent);
      return parent;
    } catch {
      this.failedAt.set(sessionId, this.now());
      return undefined;
    } finally {
      this.inflight.delete(sessionId);
    }
  }
}
