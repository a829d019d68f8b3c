import type { ToolCall, ToolEvent } from "./types.ts";

/**
 * A ToolCall with the tracker's decisions. Spelled out, not `{ ...call }`: the
 * spread took V8's slow copy path and was most of recordCall's time in the
 * replay profile (bench/core-replay.ts).
 */
export function toolEvent(call: ToolCall, landed: boolean, reverted: boolean, novel: boolean): ToolEvent {
  return {
    sessionId: call.sessionId,
    parentId: call.parentId,
    agent: call.agent,
    tool: call.tool,
    callId: call.callId,
    fp: call.fp,
    nfp: call.nfp,
    target: call.target,
    exit: call.exit,
    failed: call.failed,
    effect: call.effect,
    change: call.change,
    write: call.write,
    outcome: call.outcome,
    worktree: call.worktree,
    time: call.time,
    landed,
    reverted,
    novel,
  };
}
