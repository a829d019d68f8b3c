// The event hook (opencode does not await it): failed tools, spend, session
// parents and titles go to the runtime; a finished compaction to the
// directive runner, which reports a recovery's result.
import type { Hooks } from "@opencode-ai/plugin";
import { pluginEventOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function event({ sg, guard, runner }: HookContext): NonNullable<Hooks["event"]> {
  return async ({ event }) => {
    guard("event_failed", () => {
      const seen = pluginEventOf(event);
      if (!seen) return;
      if (seen.type === "session.compacted") void runner.onCompacted(seen.sessionId).catch(() => undefined);
      else sg.event(seen);
    });
  };
}
