// POST /progress: the plugins' and the watchdog's reports. The plugin token,
// a JSON content type and a size cap (server.max_progress_bytes, live) guard
// it; the body is stored in one transaction and the answer carries the
// reporter's directives and toasts.
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { type ProgressMessage, type ProgressResponse, parseProgressBody } from "../../../shared/index.ts";
import type { ProgressResult } from "../../db/store-progress.ts";
import { isBusy, isUnavailable } from "../../db/unavailable.ts";
import { planKnobs, planTransition } from "../../modes/plan.ts";
import { jsonBody } from "../admin-body.ts";
import { requireJson } from "../browser-guard.ts";
import { requireToken } from "../require-token.ts";
import type { RouteDeps } from "./deps.ts";

export interface ProgressDeps extends RouteDeps {
  pluginToken: string;
  /** Delivers what the stored body caused, after the commit; its failure is logged, the report stands. */
  afterStored?: (result: ProgressResult, messages: ProgressMessage[]) => void;
}

const TOKEN_ERROR =
  "missing or wrong bearer token: reporters present STALLGUARD_TOKEN or the plugin.token file that serve writes";

/** The body cap, read from the live config on every request. */
function progressLimit(d: RouteDeps) {
  return bodyLimit({
    maxSize: d.config.get().server.max_progress_bytes,
    onError: (c) => {
      const max = d.config.get().server.max_progress_bytes;
      // The limit in the answer: the reporter cuts its batch to it and sends again.
      return c.json({ error: `body larger than ${max} bytes`, max_progress_bytes: max }, 413);
    },
  });
}

/** @example app.route("/", progressRoutes({ ...routeDeps, pluginToken })); */
export function progressRoutes(d: ProgressDeps): Hono {
  const app = new Hono();
  app.post(
    "/progress",
    requireToken({ token: d.pluginToken, error: TOKEN_ERROR }),
    requireJson(),
    (c, next) => progressLimit(d)(c, next),
    async (c) => {
      const body = await jsonBody(c);
      if (!body.ok) return c.json({ error: "body is not JSON", issues: ["(root): invalid JSON"] }, 400);
      const parsed = parseProgressBody(body.value);
      if (!parsed.ok)
        return c.json({ error: "invalid progress body", issues: parsed.errors.slice(0, 50) }, 400);
      let result: ProgressResult;
      try {
        result = await storeProgress(d, parsed.value, d.now());
      } catch (err) {
        if (!isUnavailable(err)) throw err;
        // Another process holds the write lock, or the database refuses writes (full,
        // read-only): the reporter keeps its queue and retries.
        const what = isBusy(err) ? "database busy" : "database cannot be written";
        return c.json({ error: `${what}, retry` }, 503, { "retry-after": "1" });
      }
      try {
        d.afterStored?.(result, parsed.value);
      } catch (err) {
        d.log(`progress: delivery after the commit failed: ${(err as Error).message}`);
      }
      return c.json(progressResponse(result));
    },
  );
  return app;
}

function progressResponse(result: ProgressResult): ProgressResponse {
  const toasts = result.fresh.flatMap((f) => f.plan.toasts).slice(0, 20);
  return {
    accepted: result.accepted,
    duplicates: result.duplicates,
    directives: result.directives,
    ...(toasts.length > 0 ? { toasts } : {}),
    ...(result.covered.length > 0 ? { covered: result.covered.slice(0, 100) } : {}),
  };
}

/**
 * Stores a validated /progress body in one transaction: every fresh
 * transition is planned (router-ext/modes/plan.ts) with the live knobs from
 * what the store holds, and applied with its effects; the open directives for
 * the reporting plugin come back with it.
 */
export function storeProgress(
  d: Pick<RouteDeps, "store" | "config">,
  messages: ProgressMessage[],
  at: number,
): Promise<ProgressResult> {
  const cfg = d.config.get();
  const knobs = planKnobs(cfg);
  return d.store.storeProgress(messages, {
    now: at,
    plan: (ctx, t) => planTransition(ctx, t, knobs, at),
    directiveMaxAgeMs: cfg.progress.recover_window,
    pluginLiveMs: knobs.liveWindowMs,
  });
}
