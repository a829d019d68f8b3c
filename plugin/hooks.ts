// The thin shell: opencode's hook names mapped onto the Stallguard object.
// Every hook is wrapped so nothing the plugin does can throw into opencode;
// a failure is logged with a code instead.
import type { Hooks } from "@opencode-ai/plugin";
import type { Stallguard } from "./state.ts";

type Guard = <T>(code: string, fn: () => T) => T | undefined;

function guardFor(sg: Stallguard): Guard {
  return (code, fn) => {
    try {
      const out = fn();
      if (out instanceof Promise) {
        return out.catch((err: unknown) => {
          sg.log("error", code, String(err));
          return undefined;
        }) as typeof out;
      }
      return out;
    } catch (err) {
      sg.log("error", code, String(err));
      return undefined;
    }
  };
}

export function createHooks(sg: Stallguard): Hooks {
  const guard = guardFor(sg);
  return {
    "chat.headers": async (input, output) => {
      await guard("chat_headers_failed", () => sg.headers(input, output));
    },
    "chat.message": async (input, output) => {
      guard("chat_message_failed", () => sg.chatMessage(input, output));
    },
    "tool.execute.before": async (input, output) => {
      await guard("tool_before_failed", () => sg.toolBefore(input, output));
    },
    "tool.execute.after": async (input, output) => {
      guard("tool_after_failed", () => sg.toolAfter(input, output));
    },
    event: async ({ event }) => {
      guard("event_failed", () => sg.event(event));
    },
    dispose: async () => {
      await guard("dispose_failed", () => sg.dispose());
    },
  };
}
