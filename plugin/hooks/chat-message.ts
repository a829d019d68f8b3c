// chat.message, once per user turn through the prompt API: typed, or injected
// by another plugin (a continuation nudge, which is a signal).
import type { Hooks } from "@opencode-ai/plugin";
import { userTurnOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function chatMessage({ sg, guard }: HookContext): NonNullable<Hooks["chat.message"]> {
  return async (input, output) => {
    guard("chat_message_failed", () => {
      const turn = userTurnOf(input, output, sg.continuationMarkers);
      if (turn) sg.userTurn(turn);
    });
  };
}
