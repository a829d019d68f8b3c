// experimental.compaction.autocontinue, awaited by opencode before its
// continue turn: a recovery's result reaches the router (which lifts the
// refusal) first. The wait is bounded by the directive runner.
import type { Hooks } from "@opencode-ai/plugin";
import { sessionIdOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function compactionAutocontinue({
  guard,
  runner,
}: HookContext): NonNullable<Hooks["experimental.compaction.autocontinue"]> {
  return async (input) => {
    await guard("autocontinue_failed", () => {
      const id = sessionIdOf(input);
      return id ? runner.onCompacted(id) : undefined;
    });
  };
}
