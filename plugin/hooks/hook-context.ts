// What each hook file is handed: the runtime, the guard it runs in, and the
// directive runner with the models it summarizes with (the modes' recoveries).
import type { BoundedMap } from "../../shared/index.ts";
import type { DirectiveRunner, ModelRef } from "../directives.ts";
import type { Stallguard } from "../runtime.ts";
import type { Guard } from "./guard.ts";

export interface HookContext {
  sg: Stallguard;
  guard: Guard;
  runner: DirectiveRunner;
  /** The last model each session asked (chat.headers), for a recovery's summarize call. */
  models: BoundedMap<string, ModelRef>;
}
