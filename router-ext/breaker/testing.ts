// Test helpers for the breaker: a real store on a temp SQLite file and builders
// for the gate's request records and the reporters' stall transitions.
import { configSchema, type Transition } from "../../shared/index.ts";
import { quietSignals, transition } from "../../test/helpers/wire-fixtures.ts";
import type { ProgressOptions } from "../db/store-progress.ts";
import type { RequestRecord } from "../gate/types.ts";
import { planKnobs, planTransition } from "../modes/plan.ts";
import type { RouterStore } from "../store/router-store.ts";

export const signals = quietSignals;

/** A stall (or recovery) transition as the plugin reports it. */
export function stallTransition(session: string, at: number, over: Partial<Transition> = {}): Transition {
  const verdict = over.verdict ?? "looping";
  return transition(session, null, "build", "ok", verdict, at, {
    id: `p:${session}:${at}:${verdict}`,
    reason: "duplicates",
    signals: signals(),
    ...over,
  });
}

export function served(model: string, sessionId: string, at: number, root = sessionId): RequestRecord {
  return {
    session_id: sessionId,
    root_id: root,
    agent: "build",
    parent: null,
    model,
    status: 200,
    prompt_tokens: 100,
    completion_tokens: 10,
    cached_tokens: 0,
    cost_usd: null,
    context_tokens: 100,
    started_at: at,
    duration_ms: 5,
    refused: false,
    plugin_version: null,
    client: "default",
    error: null,
    response_bytes: 100,
  };
}

/** /progress options with the default (warn) mode's plan. */
export const progressOpts = (now: number): ProgressOptions => {
  const knobs = planKnobs(configSchema.parse({}));
  return { now, plan: (ctx, t) => planTransition(ctx, t, knobs, now) };
};

/** Stores one transition as a /progress body would. */
export async function storeTransition(store: RouterStore, t: Transition): Promise<void> {
  await store.storeProgress([t], progressOpts(t.at));
}
