// The hooks opencode calls, one file per hook in this folder, each a thin
// shell: it maps opencode's input to a typed value (plugin/events.ts, pure)
// and hands it to the runtime, inside the one guard (guard.ts). Here they are
// put together, with the directive runner that carries out the modes'
// directives from the router's /progress answers, off the tool path.
import type { Hooks } from "@opencode-ai/plugin";
import { BoundedMap } from "../../shared/index.ts";
import {
  clientOps,
  DirectiveRunner,
  type KnownModels,
  type ModelRef,
  type OpsClient,
} from "../directives.ts";
import type { Stallguard } from "../runtime.ts";
import { chatHeaders } from "./chat-headers.ts";
import { chatMessage } from "./chat-message.ts";
import { compactionAutocontinue } from "./compaction-autocontinue.ts";
import { event } from "./event.ts";
import { guardFor } from "./guard.ts";
import type { HookContext } from "./hook-context.ts";
import { sessionCompacting } from "./session-compacting.ts";
import { toolExecuteAfter } from "./tool-execute-after.ts";
import { toolExecuteBefore } from "./tool-execute-before.ts";

export interface HookExtras {
  /** opencode's SDK client, for abort / summarize / toast (directives). */
  client?: unknown;
}

/** Wires the directive runner to the reporter's answers; returns it (tests reach in). */
export function directiveRunner(sg: Stallguard, client: unknown, models: KnownModels): DirectiveRunner {
  const runner = new DirectiveRunner(
    clientOps((client ?? {}) as OpsClient, models),
    async (r) => {
      sg.reporter.enqueue(r);
      await sg.reporter.flush();
    },
    { log: (code, msg) => sg.log("warn", code, msg) },
  );
  sg.reporter.onAnswer = (answer) => {
    if (answer.directives.length > 0) runner.handle(answer.directives);
    // A mode's hard stop, said in the session that reported it.
    for (const t of answer.toasts ?? [])
      sg.showToast({ title: t.title, message: t.message, variant: t.variant, duration: 15_000 });
  };
  return runner;
}

export function createHooks(sg: Stallguard, extras: HookExtras = {}): Hooks {
  const models = new BoundedMap<string, ModelRef>(1000);
  const ctx: HookContext = {
    sg,
    guard: guardFor((level, code, message) => sg.log(level, code, message)),
    runner: directiveRunner(sg, extras.client, models),
    models,
  };
  return {
    "chat.headers": chatHeaders(ctx),
    "chat.message": chatMessage(ctx),
    "tool.execute.before": toolExecuteBefore(ctx),
    "tool.execute.after": toolExecuteAfter(ctx),
    "experimental.session.compacting": sessionCompacting(ctx),
    "experimental.compaction.autocontinue": compactionAutocontinue(ctx),
    event: event(ctx),
    dispose: async () => {
      await ctx.guard("dispose_failed", () => sg.dispose());
    },
  };
}
