// The stored shape -> observations. GET /session/{id}/message, `opencode
// export` and the opencode.db message/part tables all hold {info, parts}
// records; live message.part.updated events carry the same part shape.
import { type BashMemo, bashMemo } from "../bash-call.ts";
import { isInjectedTurn, isResumeTurn, type TextPartLike, userTextHash } from "../injected.ts";
import { isRec, num, obj, type Rec, text } from "../read.ts";
import {
  answerOutcome,
  type CallContext,
  callContext,
  type RawToolCall,
  TOOL_METADATA_KEYS,
  toToolCall,
} from "../tool-call.ts";
import type { Observation, ToolCall, TurnObservation } from "../types.ts";

export interface StoredMessage {
  info: unknown;
  parts: unknown;
}

/** Where a loader that drops tool output keeps the answer's hash in the part's state (not an opencode field). */
export const STORED_OUTCOME = "stallguard_outcome";

/**
 * A stored part cut down to what observationsFromMessages reads, for a loader
 * that holds many sessions (the opencode.db reader): a finished tool part with
 * its answer hashed (as the adapter would hash it) and its metadata cut to the
 * keys toToolCall reads; text and compaction parts with the fields the turn
 * rules read. Every other part (step markers, patches, reasoning, unfinished
 * tools) is never read by the adapter: null. The parsed record is dropped, so
 * no tool output or file content outlives the read.
 */
export function storedPart(part: Rec): Rec | null {
  if (part.type === "text")
    return { type: "text", text: part.text, synthetic: part.synthetic, metadata: part.metadata };
  if (part.type === "compaction") return { type: "compaction" };
  if (part.type !== "tool") return null;
  const s = obj(part.state);
  const status = s.status;
  if (status !== "completed" && status !== "error") return null;
  const outcome = answerOutcome({
    tool: text(part.tool) ?? "unknown",
    metadata: s.metadata,
    status,
    output: typeof s.output === "string" ? s.output : s.error,
  });
  return {
    type: "tool",
    id: part.id,
    tool: part.tool,
    callID: part.callID,
    state: {
      status,
      input: s.input,
      metadata: isRec(s.metadata) ? readMetadata(s.metadata) : s.metadata,
      time: s.time,
      [STORED_OUTCOME]: outcome,
    },
  };
}

/** The metadata keys toToolCall reads, those present. */
function readMetadata(meta: Rec): Rec {
  const out: Rec = {};
  for (const key of TOOL_METADATA_KEYS) if (key in meta) out[key] = meta[key];
  return out;
}

/**
 * A stored message's info cut down to what observationsFromMessages reads.
 * `summary` is never kept: a user message's carries its diffs (content), and
 * the compaction summary an assistant message flags with it is told by its
 * agent "compaction" as well.
 */
export function storedInfo(info: Rec, id: string, sessionId: string): Rec {
  return {
    role: info.role,
    agent: info.agent,
    mode: info.mode,
    providerID: info.providerID,
    modelID: info.modelID,
    cost: info.cost,
    tokens: info.tokens,
    time: info.time,
    id,
    sessionID: sessionId,
  };
}

export interface StoredSession {
  id: string;
  parentId: string | null;
  directory?: string | null;
}

/** A finished tool part (completed or error) -> ToolCall; pending and running parts -> null. */
export function fromToolPart(
  part: unknown,
  ctx: Omit<CallContext, "time"> & { time?: number },
): ToolCall | null {
  const p = obj(part);
  if (p.type !== "tool") return null;
  const state = obj(p.state);
  const status = state.status;
  if (status !== "completed" && status !== "error") return null;
  const time = obj(state.time);
  const raw: RawToolCall = {
    tool: text(p.tool) ?? "unknown",
    callId: text(p.callID) ?? text(p.id) ?? "",
    args: state.input,
    metadata: state.metadata,
    status,
    output: typeof state.output === "string" ? state.output : state.error,
    // Always set (undefined: hash the output), so every RawToolCall has one shape.
    outcome: STORED_OUTCOME in state ? ((state[STORED_OUTCOME] as string | null) ?? null) : undefined,
  };
  const at = num(time.end) || num(time.start) || ctx.time || 0;
  // One context per message, shared by its calls (time passed apart): no copy per call.
  return toToolCall(raw, fullContext(ctx), at);
}

/** The context as toToolCall takes it: `ctx` itself when it is one already (the loop below makes them so). */
function fullContext(ctx: Omit<CallContext, "time"> & { time?: number }): CallContext {
  return typeof ctx.time === "number" ? (ctx as CallContext) : callContext(ctx, ctx.sessionId, 0);
}

/** Tokens a request carried: fresh input plus cache reads and writes. */
export function promptTokensOf(tokens: unknown): number {
  const t = obj(tokens);
  const cache = obj(t.cache);
  return (num(t.input) ?? 0) + (num(cache.read) ?? 0) + (num(cache.write) ?? 0);
}

export interface StoredOptions {
  testPatterns: readonly RegExp[];
  continuationMarkers: readonly string[];
}

/** What the adapter reads of a policy: its test patterns and continuation markers, nothing else. */
export function observeOptions(policy: StoredOptions): StoredOptions {
  return { testPatterns: policy.testPatterns, continuationMarkers: policy.continuationMarkers };
}

/**
 * Observations for one session's messages, oldest first: user turns (injected
 * or not), compactions, one turn plus usage per assistant message, then its
 * finished tool calls. A compaction's own summary request is spend, not an
 * agent step, and the turn opencode writes to resume after it (its synthetic
 * "continue", or the user's message replayed after an overflow) is neither a
 * person steering nor a nudge: the plugin sees none of them as turns either.
 * Malformed records are skipped, never thrown on.
 */
export function observationsFromMessages(
  session: StoredSession,
  messages: readonly StoredMessage[],
  opts: StoredOptions,
): Observation[] {
  const observer = new SessionObserver(session, opts);
  for (const m of Array.isArray(messages) ? messages : []) observer.add(m);
  return observer.observations;
}

/**
 * observationsFromMessages one message at a time, for a loader that reads a
 * session as it goes: each message's parts can be dropped once added.
 */
export class SessionObserver {
  readonly observations: Observation[] = [];
  private agent = "";
  private resuming = false;
  /** The session's bash commands by text, read once each, dropped with the observer. */
  private readonly memo: BashMemo;

  constructor(
    private readonly session: StoredSession,
    private readonly opts: StoredOptions,
  ) {
    this.memo = bashMemo(session.directory ?? null, opts.testPatterns);
  }

  /** The next message, oldest first. */
  add(m: unknown): void {
    const { session, opts, observations: out } = this;
    const info = obj(obj(m).info);
    const parts = Array.isArray(obj(m).parts) ? (obj(m).parts as unknown[]) : [];
    const created = num(obj(info.time).created) ?? 0;
    const role = info.role;
    // The compaction summary request runs as agent "compaction": it is still
    // this session's turn, and must not make a read-only agent look like a worker.
    const named = text(info.agent) ?? text(info.mode);
    const compactionTurn = named === "compaction" || info.summary === true;
    if (named && !compactionTurn) this.agent = named;
    const who = this.agent || "unknown";
    if (role === "user") {
      this.resuming = pushUser(out, session, who, created, parts, this.resuming, opts);
      return;
    }
    if (role !== "assistant") return;
    if (!compactionTurn) this.resuming = false;
    pushAssistant(out, session, who, created, info, parts, compactionTurn, opts, this.memo);
  }
}

// The steps below take the message's place as plain arguments, not an object:
// they run once per stored message.

/**
 * A user message: a compaction (the resume turn after it is skipped), the
 * resume turn itself, or a user turn. Returns whether a resume turn is still
 * expected.
 */
function pushUser(
  out: Observation[],
  session: StoredSession,
  who: string,
  created: number,
  parts: unknown[],
  resuming: boolean,
  opts: StoredOptions,
): boolean {
  if (parts.some((p) => obj(p).type === "compaction")) {
    out.push({ kind: "compaction", sessionId: session.id, time: created });
    return true;
  }
  if (resuming || isResumeTurn(parts as TextPartLike[])) return false;
  // Literals with every field spelled out, not spreads of a shared base: this
  // runs per stored message and the spreads took V8's slow copy path.
  out.push({
    kind: "user",
    sessionId: session.id,
    parentId: session.parentId,
    agent: who,
    time: created,
    injected: isInjectedTurn(parts as TextPartLike[], opts.continuationMarkers),
    textHash: userTextHash(parts as TextPartLike[]),
  });
  return false;
}

/** An assistant message: its turn (not for a compaction's summary request), its usage, then its finished tool calls. */
function pushAssistant(
  out: Observation[],
  session: StoredSession,
  who: string,
  created: number,
  info: Record<string, unknown>,
  parts: unknown[],
  compactionTurn: boolean,
  opts: StoredOptions,
  memo: BashMemo,
): void {
  if (!compactionTurn) {
    const provider = text(info.providerID);
    const modelId = text(info.modelID);
    const model = provider && modelId ? `${provider}/${modelId}` : (provider ?? modelId);
    const turn: TurnObservation = {
      kind: "turn",
      sessionId: session.id,
      parentId: session.parentId,
      agent: who,
      time: created,
    };
    if (model) turn.model = model;
    out.push(turn);
  }
  const prompt = promptTokensOf(info.tokens);
  out.push({
    kind: "usage",
    sessionId: session.id,
    messageId: text(info.id) ?? `${session.id}:${out.length}`,
    time: num(obj(info.time).completed) || created,
    costUsd: num(info.cost) ?? 0,
    promptTokens: prompt,
    contextTokens: prompt,
  });
  // One context per message, not per part: most parts are text and step markers.
  let ctx: Parameters<typeof fromToolPart>[1] | null = null;
  for (const part of parts) {
    if (obj(part).type !== "tool") continue;
    ctx ??= {
      sessionId: session.id,
      parentId: session.parentId,
      agent: who,
      time: created,
      directory: session.directory ?? null,
      testPatterns: opts.testPatterns,
      bashMemo: memo,
    };
    const call = fromToolPart(part, ctx);
    if (call) out.push({ kind: "tool", call });
  }
}
