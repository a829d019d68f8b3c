// The plugin's tool.execute.after shape -> ToolCall. tool.execute.after fires
// only for tools that succeeded, so its status is always completed. The
// payload is read here, once (parseToolHook); the plugin's sensor and state
// take the parsed hook.
import { obj, text } from "../read.ts";
import { type CallContext, callContext, toToolCall } from "../tool-call.ts";
import type { ToolCall } from "../types.ts";

export interface ToolHookInput {
  tool: string;
  sessionID: string;
  callID: string;
  args: unknown;
}

export interface ToolHookOutput {
  title?: unknown;
  output?: unknown;
  metadata?: unknown;
}

/** The fields of tool.execute.after's (input, output) the core reads; a missing or empty id is undefined. */
export interface ToolHook {
  tool: string | undefined;
  sessionId: string | undefined;
  callId: string | undefined;
  args: unknown;
  metadata: unknown;
  /** The tool's answer: hashed into the call's outcome, then dropped. */
  output: unknown;
}

export type CompleteToolHook = ToolHook & { tool: string; sessionId: string; callId: string };

/** Reads a hook payload of any shape; never throws. */
export function parseToolHook(input: unknown, output: unknown): ToolHook {
  const i = obj(input);
  return {
    tool: text(i.tool),
    sessionId: text(i.sessionID),
    callId: text(i.callID),
    args: i.args,
    metadata: obj(output).metadata,
    output: obj(output).output,
  };
}

/** The hook names its tool, session and call (what the plugin needs to count it once). */
export function isCompleteHook(h: ToolHook): h is CompleteToolHook {
  return h.tool !== undefined && h.sessionId !== undefined && h.callId !== undefined;
}

/** A parsed hook -> ToolCall; missing fields become "unknown" / "". */
export function toolHookCall(h: ToolHook, ctx: Omit<CallContext, "sessionId">): ToolCall {
  return toToolCall(
    {
      tool: h.tool ?? "unknown",
      callId: h.callId ?? "",
      args: h.args,
      metadata: h.metadata,
      status: "completed",
      output: h.output,
    },
    callContext(ctx, h.sessionId ?? "unknown", ctx.time),
  );
}

/** Never throws on a malformed payload: missing fields become empty. */
export function fromToolHook(
  input: ToolHookInput,
  output: ToolHookOutput | undefined,
  ctx: Omit<CallContext, "sessionId">,
): ToolCall {
  return toolHookCall(parseToolHook(input, output), ctx);
}
