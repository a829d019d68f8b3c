// Test support (not bundled): opencode's side of the hooks. Tests and benches
// hand the plugin what opencode hands it, through the real hooks (the event
// mapping, the guard, the runtime), loosely typed so a test can pass junk.
// One set of hooks per runtime, made on first use, as opencode makes one.
import { createHooks } from "./hooks/create-hooks.ts";
import type { Stallguard } from "./runtime.ts";

type Loose = (input: unknown, output: unknown) => Promise<void>;

export interface HookCalls {
  headers: Loose;
  chatMessage: Loose;
  toolBefore: Loose;
  toolAfter: Loose;
  event: (event: unknown) => Promise<void>;
}

const made = new WeakMap<Stallguard, HookCalls>();

/** The hooks opencode would call for this runtime; tool.execute.after and event act before they return. */
export function hooksOf(sg: Stallguard): HookCalls {
  const known = made.get(sg);
  if (known) return known;
  const h = createHooks(sg) as unknown as Record<string, Loose>;
  const pick = (name: string): Loose => h[name] as Loose;
  const calls: HookCalls = {
    headers: pick("chat.headers"),
    chatMessage: pick("chat.message"),
    toolBefore: pick("tool.execute.before"),
    toolAfter: pick("tool.execute.after"),
    event: (event) => (h.event as (i: unknown) => Promise<void>)({ event }),
  };
  made.set(sg, calls);
  return calls;
}
