/**
 * The gate's view of the durable store (its types). The server implements it
 * over any Sql engine (router-ext/store/sql-store.ts); tests use a small
 * in-memory one (gate/testing.ts). Both
 * answer from facts held in memory (gate/facts.ts) with the one decision
 * (modes/gate-decision.ts), synchronously: a model request never waits on the
 * database. What a request teaches and its record are written off its path.
 *
 * Nothing here carries a request or response body: identity, counts, money
 * and timings only.
 */

/** Who is asking, read from the request headers. */
export interface GateIdentity {
  /** The session id: X-Router-Conversation, else opencode's x-session-id; null when neither is sent. */
  sessionId: string | null;
  /** X-Router-Agent. */
  agent: string | null;
  /** X-Router-Parent, else opencode's x-parent-session-id. */
  parent: string | null;
  /** X-Stallguard-Plugin (the plugin's version), null without the plugin. */
  pluginVersion: string | null;
  /** Where the plugin says it reports (X-Stallguard-Instance, -Report-To, -Report-State); absent from older plugins. */
  link?: PluginLinkHeaders | null;
}

/** The plugin process behind a request and how its reporting goes, as its headers say. */
export interface PluginLinkHeaders {
  instanceId: string;
  /** The router URL it posts /progress to; null when the header is missing or not an http(s) URL. */
  reportTo: string | null;
  /** Its last delivery: nothing sent yet, delivered, or failing; null when not said. */
  state: "pending" | "ok" | "failing" | null;
}

/** Whether a request may pass. */
export interface GateDecision {
  refused: boolean;
  /** What the refusal covers: this session only, or its whole tree. null when allowed. */
  scope: "session" | "tree" | null;
  /** Why (shown to the user inside the error message). null when allowed. */
  reason: string | null;
  /** The session's tree root as the store knows it (the session itself for a root). */
  rootId: string | null;
  /**
   * Modes (auto_limit_context, auto_recover stage 2): the tree is capped and this
   * session's last measured context is at or over the cap. The gate answers
   * with a context-overflow error so opencode compacts. Absent or null: no cap applies.
   */
  overCap?: { cap: number; tokens: number } | null;
  /** When the refusal was set (counted once per session and refusal). */
  refusedAt?: number;
  /**
   * The store cannot write right now: the answer comes from what it knew
   * (a known refusal stays refused, an unknown session passes).
   */
  degraded?: boolean;
}

/** One proxied (or refused) request. Snake case: it maps onto a table row. */
export interface RequestRecord {
  /** null when the client sent no session id header. */
  session_id: string | null;
  root_id: string | null;
  agent: string | null;
  parent: string | null;
  /** The request body's `model`, null when absent or unreadable. */
  model: string | null;
  /** HTTP status answered to the client (the refusal status for a refused request). */
  status: number;
  prompt_tokens: number | null;
  completion_tokens: number | null;
  cached_tokens: number | null;
  /** From the price table; null when the model has no price or usage is unknown. */
  cost_usd: number | null;
  /** Context size of this turn: the prompt tokens. */
  context_tokens: number | null;
  /** Epoch milliseconds when the gate received the request. */
  started_at: number;
  /** Until the response ended (the last byte of a stream). */
  duration_ms: number;
  refused: boolean;
  plugin_version: string | null;
  /** The name of the client key the request presented. */
  client: string | null;
  /**
   * How the answer ended when it did not complete: the upstream's stream broke
   * (upstream_stream), went silent (idle_timeout) or the client left
   * (client_abort). null for a complete answer.
   */
  error: string | null;
  /** Bytes of the answer that reached the client; null for the gate's own answers. */
  response_bytes: number | null;
}

export interface GateStore {
  /** Learns the identity (parent -> root) and answers; the learning is written later. */
  decide(identity: GateIdentity): GateDecision;
  /** The same answer as decide, learning and counting nothing (GET never writes). */
  peek(identity: GateIdentity): GateDecision;
  /** Takes a record; the store writes it off the request path, in a batch. */
  recordRequest(record: RequestRecord): void;
}

/** The decision for an unknown or allowed session. */
export function allowed(rootId: string | null): GateDecision {
  return { refused: false, scope: null, reason: null, rootId };
}
