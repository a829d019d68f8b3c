// The thin shell: opencode's hook names mapped onto the Stallguard object.
// Every hook is wrapped so nothing the plugin does can throw into opencode;
// a failure is logged with a code instead. The modes' directives (from the
// router's /progress answers) run here, off the tool path.
import type { Hooks } from "@opencode-ai/plugin";
import { BoundedMap, obj, text } from "../shared/index.ts";
import {
  clientOps,
  DirectiveRunner,
  type KnownModels,
  type ModelRef,
  modelFromInput,
  type OpsClient,
} from "./directives.ts";
import type { Stallguard } from "./runtime.ts";

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

const sessionOf = (v: unknown): string | undefined => text(obj(v).sessionID);

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
  const guard = guardFor(sg);
  const models = new BoundedMap<string, ModelRef>(1000);
  const runner = directiveRunner(sg, extras.client, models);
  const rememberModel = (input: unknown) => {
    const id = sessionOf(input);
    const agent = (input as { agent?: unknown } | null)?.agent;
    if (!id || agent === "title" || agent === "compaction") return;
    const m = modelFromInput(input);
    if (!m) return;
    models.set(id, m);
  };
  return {
    "chat.headers": async (input, output) => {
      guard("chat_model_failed", () => rememberModel(input));
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
    "experimental.session.compacting": async (input, output) => {
      guard("compacting_failed", () => {
        const id = sessionOf(input);
        if (id && output && typeof output === "object") runner.onCompacting(id, output);
      });
    },
    "experimental.compaction.autocontinue": async (input) => {
      // Awaited by opencode before its continue turn: the result reaches the
      // router (which lifts the recovery's refusal) first. Bounded wait.
      await guard("autocontinue_failed", () => {
        const id = sessionOf(input);
        return id ? runner.onCompacted(id) : undefined;
      });
    },
    event: async ({ event }) => {
      guard("event_failed", () => sg.event(event));
      guard("event_directive_failed", () => {
        const e = event as { type?: unknown; properties?: unknown } | null;
        if (e?.type !== "session.compacted") return;
        const id = sessionOf(e.properties);
        if (id) void runner.onCompacted(id).catch(() => undefined);
      });
    },
    dispose: async () => {
      await guard("dispose_failed", () => sg.dispose());
    },
  };
}
