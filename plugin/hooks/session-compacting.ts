// experimental.session.compacting, before the summary call: a recovery's
// incident report goes into the compaction's context, so the summary keeps it.
import type { Hooks } from "@opencode-ai/plugin";
import { compactionContextOf, sessionIdOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function sessionCompacting({
  guard,
  runner,
}: HookContext): NonNullable<Hooks["experimental.session.compacting"]> {
  return async (input, output) => {
    guard("compacting_failed", () => {
      const id = sessionIdOf(input);
      const out = compactionContextOf(output);
      if (id && out) runner.onCompacting(id, out);
    });
  };
}
