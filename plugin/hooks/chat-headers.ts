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
    // One promise on this path (it runs before every LLM request): the runtime fills the headers in.
    await guard("chat_headers_failed", () => {
      const headers = headersOf(output);
      return req && headers ? sg.llmRequest(req, headers) : undefined;
    });
  };
}
