// Tool calls in, the core's ToolCall out, each counted once. Two paths:
// tool.execute.after (successful tools only) and message.part.updated tool
// parts (the only place failed tools show up). The hook always runs before
// the part turns completed, so a completed part whose call the hook already
// counted is skipped; a part is never counted twice however often it is
// re-published. Nothing of the arguments or output is kept here.

import {
  BoundedMap,
  type CallContext,
  callContext,
  fromToolPart,
  isCompleteHook,
  obj,
  parseToolHook,
  type ToolCall,
  text,
  toolHookCall,
} from "../shared/index.ts";

const key = (sessionId: string, callId: string) => `${sessionId}\u0000${callId}`;

export class CallDedupe {
  /** Calls counted through the hook whose completed part has not arrived yet. */
  private readonly viaHook: BoundedMap<string, true>;
  /** Part ids already handled (counted or skipped). */
  private readonly parts: BoundedMap<string, true>;

  constructor(capacity = 4096) {
    this.viaHook = new BoundedMap(capacity);
    this.parts = new BoundedMap(capacity);
  }

  get size(): number {
    return this.viaHook.size + this.parts.size;
  }

  /** The hook saw this call: count it, and skip its completed part later. */
  fromHook(sessionId: string, callId: string): boolean {
    this.viaHook.set(key(sessionId, callId), true);
    return true;
  }

  /** A finished tool part: true when it must be counted (not seen via the hook, not seen before). */
  fromPart(partId: string | undefined, sessionId: string, callId: string, status: string): boolean {
    if (partId) {
      if (this.parts.has(partId)) return false;
      this.parts.set(partId, true);
    }
    const k = key(sessionId, callId);
    if (status === "completed" && this.viaHook.has(k)) {
      this.viaHook.delete(k);
      return false;
    }
    return true;
  }
}

export type SensorContext = Omit<CallContext, "sessionId">;

/** tool.execute.after -> ToolCall. */
export function callFromHook(input: unknown, output: unknown, ctx: SensorContext): ToolCall | null {
  const hook = parseToolHook(input, output);
  return isCompleteHook(hook) ? toolHookCall(hook, ctx) : null;
}

/** A finished tool part -> ToolCall (the part's own session id wins). */
export function callFromPart(part: unknown, ctx: Omit<SensorContext, "time"> & { time: number }) {
  const p = obj(part);
  const sessionId = text(p.sessionID);
  if (!sessionId) return null;
  return fromToolPart(part, callContext(ctx, sessionId, ctx.time));
}
