// The gate's decision, one pure function of what is known: the refusals (by
// session and by tree), the tree (each session's root), the modes' context
// caps with each session's last measured context, and the one exemption a
// mode's refusal has (its recovery's own compaction request). The SQLite
// store and every test double call this function over their facts; none of
// them says who is refused. Nothing here reads a clock or a database.
import type { RefusalScope } from "../api/schemas.ts";
import type { GateDecision, GateIdentity } from "../gate/types.ts";
import { MODES_ACTOR } from "./plan.ts";

/** A refusal in force (a lifted one is absent): who set it, when and why. */
export interface StoppedRefusal {
  by: string;
  at: number;
  reason: string | null;
}

/** What the decision reads. Lookups only: the facts are held by the caller. */
export interface GateFactsView {
  /** The refusal in force for this session (scope session) or tree root (scope tree). */
  refusal(scope: RefusalScope, key: string): StoppedRefusal | undefined;
  /** The session's root as the store knows it; undefined for a session never seen. */
  rootOf(sessionId: string): string | undefined;
  /** The tree's context cap (prompt tokens), undefined when it has none. */
  cap(rootId: string): number | undefined;
  /** The session's last measured context since its last compaction, undefined when none. */
  lastContext(sessionId: string): number | undefined;
}

/** Agents whose requests never meet the context cap: the compaction itself, and titles. */
const UNCAPPED_AGENTS = new Set(["compaction", "title"]);

/** A session id the gate can key on (the store's own bound). */
export function usableSessionId(id: string | null): id is string {
  return id !== null && id.length > 0 && id.length <= 200;
}

/** The tree a request belongs to: its own root when known, else its parent's, else itself. */
export function rootFor(facts: GateFactsView, identity: GateIdentity & { sessionId: string }): string {
  const known = facts.rootOf(identity.sessionId);
  if (known !== undefined) return known;
  const parent = identity.parent && identity.parent !== identity.sessionId ? identity.parent : null;
  return parent === null ? identity.sessionId : (facts.rootOf(parent) ?? parent);
}

/**
 * Whether the request passes. A session refused on its own is refused unless
 * the request is the compaction a mode's recovery runs under its refusal; a
 * session in a stopped tree is refused; otherwise a capped tree answers a
 * session measured at or over the cap with overCap (never the compaction or
 * a title request).
 */
export function decideGate(facts: GateFactsView, identity: GateIdentity): GateDecision {
  const sessionId = identity.sessionId;
  if (!usableSessionId(sessionId)) return { refused: false, scope: null, reason: null, rootId: null };
  const rootId = rootFor(facts, { ...identity, sessionId });
  const own = facts.refusal("session", sessionId);
  const recovering = identity.agent === "compaction" && own?.by === MODES_ACTOR;
  if (own && !recovering) return refused("session", own, rootId);
  const tree = facts.refusal("tree", rootId);
  if (tree) return refused("tree", tree, rootId);
  const overCap = capExceeded(facts, sessionId, rootId, identity.agent);
  return { refused: false, scope: null, reason: null, rootId, ...(overCap ? { overCap } : {}) };
}

function refused(scope: RefusalScope, r: StoppedRefusal, rootId: string): GateDecision {
  return { refused: true, scope, reason: refusalReason(scope, r), rootId, refusedAt: r.at };
}

function capExceeded(
  facts: GateFactsView,
  sessionId: string,
  rootId: string,
  agent: string | null,
): { cap: number; tokens: number } | null {
  if (agent !== null && UNCAPPED_AGENTS.has(agent)) return null;
  const cap = facts.cap(rootId);
  if (cap === undefined) return null;
  const tokens = facts.lastContext(sessionId);
  return tokens !== undefined && tokens >= cap ? { cap, tokens } : null;
}

/** The refusal's reason as the user reads it inside the gate's error message. */
export function refusalReason(scope: RefusalScope, r: StoppedRefusal): string {
  const what = scope === "tree" ? "its session tree" : "this session";
  const why = r.reason ? ` (${r.reason})` : "";
  return `${what} was stopped by ${r.by} at ${new Date(r.at).toISOString()}${why}`;
}
