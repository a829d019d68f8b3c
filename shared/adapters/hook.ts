// The plugin's tool.execute.after shape -> ToolCall. tool.execute.after fires
// only for tools that succeeded, so its status is always completed.
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

export function fromToolHook(
  input: ToolHookInput,
  output: ToolHookOutput | undefined,
  ctx: Omit<CallContext, "sessionId">,
): ToolCall {
  // Never throws on a malformed hook payload: missing fields become empty.
  const i = (input !== null && typeof input === "object" ? input : {}) as Partial<ToolHookInput>;
  const o = (output !== null && typeof output === "object" ? output : {}) as ToolHookOutput;
  const text = (v: unknown, dflt: string) => (typeof v === "string" && v !== "" ? v : dflt);
  return toToolCall(
    {
      tool: text(i.tool, "unknown"),
      callId: text(i.callID, ""),
      args: i.args,
      metadata: o.metadata,
      status: "completed",
      output: o.output,
    },
    callContext(ctx, text(i.sessionID, "unknown"), ctx.time),
  );
}
