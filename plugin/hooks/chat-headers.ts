// chat.headers, once per LLM request: the identity headers every request
// carries, one turn per agent step (not the title call), and the model a
// recovery later summarizes with.
import type { Hooks } from "@opencode-ai/plugin";
import { headersOf, llmRequestOf } from "../events.ts";
import type { HookContext } from "./hook-context.ts";

export function chatHeaders({ sg, guard, models }: HookContext): NonNullable<Hooks["chat.headers"]> {
  return async (input, output) => {
    const req = guard("chat_model_failed", () => {
      const r = llmRequestOf(input);
      if (r?.modelRef) models.set(r.sessionId, r.modelRef);
      return r;
    });
    await guard("chat_headers_failed", async () => {
      const headers = headersOf(output);
      if (req && headers) Object.assign(headers, await sg.llmRequest(req));
    });
  };
}
