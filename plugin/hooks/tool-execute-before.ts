// tool.execute.before: what a call's landing is later judged against, taken
// before it runs (the file a write replaces, the work tree a bash call that
// may write finds). Awaited by opencode, so the probe's own bound applies.
import type { Hooks } from "@opencode-ai/plugin";
import { toolStartingOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function toolExecuteBefore({ sg, guard }: HookContext): NonNullable<Hooks["tool.execute.before"]> {
  return async (input, output) => {
    await guard("tool_before_failed", () => {
      const call = toolStartingOf(input, output);
      return call ? sg.toolStarting(call) : undefined;
    });
  };
}
