// tool.execute.after, for a tool that succeeded: the call goes to the judge
// at once (a bash call that may write: once its probe answers, off the tool
// path). Never awaits anything, so the session is never held up.
import type { Hooks } from "@opencode-ai/plugin";
import { toolFinishedOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function toolExecuteAfter({ sg, guard }: HookContext): NonNullable<Hooks["tool.execute.after"]> {
  return async (input, output) => {
    guard("tool_after_failed", () => {
      const call = toolFinishedOf(input, output);
      if (call) sg.toolFinished(call);
    });
  };
}
