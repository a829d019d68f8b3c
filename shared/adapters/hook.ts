// The plugin's tool.execute.after shape -> ToolCall. tool.execute.after fires
// only for tools that succeeded, so its status is always completed.
import { type CallContext, toToolCall } from "../tool-call.ts";
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
  return toToolCall(
    {
      tool: String(input.tool),
      callId: String(input.callID),
      args: input.args,
      metadata: output?.metadata,
      status: "completed",
    },
    { ...ctx, sessionId: String(input.sessionID) },
  );
}
