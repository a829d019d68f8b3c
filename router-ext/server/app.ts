// The router extension's HTTP app: POST /progress, /health, /metrics and the
// admin API. No listen and no database open here (start.ts does both), so
// tests drive it with app.request() or through a real server alike.
import type { Context, Hono as HonoType } from "hono";
import { Hono } from "hono";
import { bodyLimit } from "hono/body-limit";
import { z } from "zod";
import {
  idSchema,
  type ProgressMessage,
  type ProgressResponse,
  parseProgressBody,
} from "../../shared/index.ts";
import type { ClientsResponse, EventsResponse, Health, KnobView, TreesResponse } from "../api/schemas.ts";
import { schemaVersion } from "../db/migrations.ts";
import { flaggedSessions } from "../db/session-list.ts";
import type { IngestResult, Store } from "../db/store.ts";
import { headersOnly } from "../db/tables/plugin-links.ts";
import { isBusy, isUnavailable } from "../db/write-queue.ts";
import { planKnobs, planTransition } from "../modes/plan.ts";
import { byName, issuesOf, jsonBody, validBody } from "./admin-body.ts";
import { browserGuard } from "./browser-guard.ts";
import { displayValue, excludedLeaves, getPath, isExcluded, knobSpec, knobViews } from "./knobs.ts";
import type { LiveConfig } from "./live-config.ts";
import { renderMetrics, WARNING_SERIES_MAX } from "./metrics.ts";
import { Rejections } from "./rejections.ts";
import { isToken } from "./security.ts";
import { sessionRoutes } from "./session-routes.ts";

export interface AppDeps {
  store: Store;
  config: LiveConfig;
  adminToken: string;
  /** The plugin token (STALLGUARD_TOKEN or the plugin.token file): POST /progress always needs it. */
  pluginToken: string;
  /** The names of the gate's client keys (GET /api/clients lists them). */
  clientNames?: readonly string[];
  version: string;
  now?: () => number;
  log?: (line: string) => void;
  /**
   * Delivers what the stored body caused (the plans' alerts and log lines, the
   * blind check on a tick) once the POST /progress transaction committed. Its
   * failure is logged; the report stands.
   */
  afterIngest?: (result: IngestResult, messages: ProgressMessage[]) => void;
  /** Further Prometheus text for /metrics (the gate's histograms). */
  extraMetrics?: () => string[];
  /** Sub-apps mounted behind the admin token (their routes start with /api/). */
  adminApps?: HonoType[];
  /** Sub-apps mounted as they are (the gate's GET /gate/:session, the admin page). */
  openApps?: HonoType[];
  /**
   * The in-memory count of refused requests, shared with the gate's proxy,
   * which serves /v1 in front of this app (gate/mount.ts) and counts its own.
   */
  rejections?: Rejections;
}

const treeActionSchema = z.strictObject({ by: byName.optional() });
const rootIdSchema = idSchema;
const knobPutSchema = z.strictObject({
  path: z.string().min(1).max(200),
  value: z.unknown(),
  by: byName.optional(),
});

/**
 * @example
 * const app = createApp({ store, config, adminToken, pluginToken, version: "dev" });
 * const res = await app.request("/health");
 */
export function createApp(deps: AppDeps): Hono {
  const now = deps.now ?? Date.now;
  const log = deps.log ?? (() => {});
  const { store, config } = deps;
  const liveWindow = () => 3 * config.get().progress.heartbeat;
  const app = new Hono();
  const rejections = deps.rejections ?? new Rejections();
  const pathOf = (p: string) => (p === "/progress" ? "progress" : p.startsWith("/api/") ? "api" : "any");

  app.use(
    "*",
    browserGuard(() => config.get().server.host),
  );
  app.use("*", async (c, next) => {
    await next();
    // Counted in memory: a refused request (no credential, a foreign Origin or Host,
    // a bad or oversized body) writes nothing to the database, not even a counter.
    const s = c.res.status;
    if ([401, 403, 415, 421].includes(s) || (c.req.path === "/progress" && (s === 400 || s === 413)))
      rejections.add(pathOf(c.req.path), String(s));
  });

  app.onError((err, c) => {
    log(`error: ${c.req.method} ${c.req.path}: ${err.message}`);
    // A write the database refused (locked, full, read-only) was not done: say so, and when to retry.
    if (isUnavailable(err))
      return c.json({ error: "database cannot be written, retry" }, 503, { "retry-after": "1" });
    return c.json({ error: "internal error" }, 500);
  });
  app.notFound((c) => c.json({ error: "not found" }, 404));

  // ---- POST /progress ---------------------------------------------------
  app.post(
    "/progress",
    async (c, next) => {
      if (!isToken(c.req.header("authorization"), deps.pluginToken)) {
        return c.json(
          {
            error:
              "missing or wrong bearer token: reporters present STALLGUARD_TOKEN or the plugin.token file that serve writes",
          },
          401,
        );
      }
      if (!/^application\/json\b/i.test(c.req.header("content-type") ?? ""))
        return c.json({ error: "content-type must be application/json" }, 415);
      await next();
    },
    (c, next) =>
      bodyLimit({
        maxSize: config.get().server.max_progress_bytes,
        onError: (cc) => {
          const max = config.get().server.max_progress_bytes;
          // The limit in the answer: the reporter cuts its batch to it and sends again.
          return cc.json({ error: `body larger than ${max} bytes`, max_progress_bytes: max }, 413);
        },
      })(c, next),
    async (c) => {
      const body = await jsonBody(c);
      if (!body.ok) {
        return c.json({ error: "body is not JSON", issues: ["(root): invalid JSON"] }, 400);
      }
      const parsed = parseProgressBody(body.value);
      if (!parsed.ok) {
        return c.json({ error: "invalid progress body", issues: parsed.errors.slice(0, 50) }, 400);
      }
      let result: IngestResult;
      try {
        result = ingest(deps, parsed.value, now());
      } catch (err) {
        if (!isUnavailable(err)) throw err;
        // Another process holds the write lock, or the database refuses writes (full,
        // read-only): the reporter keeps its queue and retries.
        const what = isBusy(err) ? "database busy" : "database cannot be written";
        return c.json({ error: `${what}, retry` }, 503, { "retry-after": "1" });
      }
      try {
        deps.afterIngest?.(result, parsed.value);
      } catch (err) {
        log(`progress: delivery after the commit failed: ${(err as Error).message}`);
      }
      const toasts = result.fresh.flatMap((f) => f.plan.toasts).slice(0, 20);
      const response: ProgressResponse = {
        accepted: result.accepted,
        duplicates: result.duplicates,
        directives: result.directives,
        ...(toasts.length > 0 ? { toasts } : {}),
        ...(result.covered.length > 0 ? { covered: result.covered.slice(0, 100) } : {}),
      };
      return c.json(response);
    },
  );

  // ---- health and metrics -------------------------------------------------
  app.get("/health", (c) => {
    let db = "ok";
    let version = 0;
    try {
      store.ping();
      // The gate's waiting batch first: plugins_headers_only reads the links it carries.
      store.flush();
      version = schemaVersion(store.db);
    } catch (err) {
      db = `error: ${(err as Error).message}`;
    }
    const tick = db === "ok" ? store.lastWatchdogTick() : null;
    const health = {
      ok: db === "ok",
      version: deps.version,
      db,
      schema_version: version,
      mode: config.get().progress.mode,
      watchdog: tick
        ? {
            last_tick_at: tick.received_at,
            blind: tick.blind,
            flagged: tick.flagged,
            servers: tick.servers,
            sessions: tick.sessions,
            db: tick.db,
          }
        : null,
      plugins_live: db === "ok" ? store.livePlugins(now() - liveWindow()) : 0,
      plugins_headers_only:
        db === "ok"
          ? headersOnly(store.tables.pluginLinks.since(now() - liveWindow()), {
              now: now(),
              liveWindowMs: liveWindow(),
              heartbeatMs: config.get().progress.heartbeat,
            })
          : [],
      db_writable: db === "ok" && store.writable(),
      max_progress_bytes: config.get().server.max_progress_bytes,
      pending_writes: store.writes.stats.pending,
    } satisfies Health;
    return c.json(health, db === "ok" ? 200 : 503);
  });

  app.get("/metrics", (c) => {
    // Aggregate series are public; per-session ones name sessions, agents and
    // targets, so they need the admin token unless the knob makes them public.
    const auth = c.req.header("authorization");
    const admin = isToken(auth, deps.adminToken);
    if (auth !== undefined && !admin)
      return c.json({ error: "wrong admin token (or send none for the aggregate series)" }, 401);
    const perSession = admin || config.get().server.public_session_metrics;
    const snapshot = store.metrics({ now: now(), liveWindowMs: liveWindow() });
    let extra: string[] = [];
    try {
      extra = deps.extraMetrics?.() ?? [];
    } catch (err) {
      log(`metrics: extra metrics failed: ${(err as Error).message}`);
    }
    const flagged = perSession
      ? flaggedSessions(store.tables, { now: now(), liveWindowMs: liveWindow(), limit: WARNING_SERIES_MAX })
      : null;
    extra = [...extra, `${[...rejections.render(), ...store.writes.render()].join("\n")}\n`];
    return c.body(renderMetrics(snapshot, flagged, extra), 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
    });
  });

  // ---- admin API ----------------------------------------------------------
  const api = new Hono();
  api.use("/api/*", async (c, next) => {
    if (!isToken(c.req.header("authorization"), deps.adminToken)) {
      return c.json({ error: "admin token required: Authorization: Bearer <token>" }, 401);
    }
    await next();
  });

  api.get("/api/events", (c) => {
    const raw = c.req.query("limit");
    const limit = raw === undefined ? 100 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      return c.json({ error: "invalid query", issues: ["limit: an integer from 1 to 10000"] }, 400);
    return c.json({
      events: store.events(limit),
      router_events: store.tables.routerRuns.events(limit),
    } satisfies EventsResponse);
  });

  api.get("/api/clients", (c) => {
    store.flush();
    return c.json({
      clients: store.tables.requests.byClient(now() - config.get().progress.retention),
      configured: [...(deps.clientNames ?? [])],
    } satisfies ClientsResponse);
  });

  api.get("/api/trees", (c) =>
    c.json({
      trees: store.refusals().filter((r) => r.scope === "tree"),
      log: store.refusalLog(100),
    } satisfies TreesResponse),
  );

  const treeAction = (state: "stopped" | "running") => async (c: Context) => {
    const root = rootIdSchema.safeParse(c.req.param("root"));
    if (!root.success) return c.json({ error: "invalid tree id", issues: issuesOf(root.error) }, 400);
    const body = await validBody(c, treeActionSchema);
    if (!body.ok) return body.answer;
    const by = body.data.by ?? "admin";
    const at = now();
    store.setRefusal("tree", root.data, state, by, at, state === "stopped" ? "admin Stop" : "admin Resume");
    log(`tree ${root.data}: ${state === "stopped" ? "stopped" : "resumed"} by ${by}`);
    return c.json({ root_id: root.data, state, by, at });
  };
  api.post("/api/trees/:root/stop", treeAction("stopped"));
  api.post("/api/trees/:root/resume", treeAction("running"));

  api.get("/api/knobs", (c) => {
    const knobs = knobViews(config.get(), config.overriddenPaths()) satisfies KnobView[];
    return c.json({ knobs, excluded: excludedLeaves() });
  });

  api.put("/api/knobs", async (c) => {
    const body = await jsonBody(c);
    if (!body.ok) return c.json({ error: "body is not JSON", issues: ["(root): invalid JSON"] }, 400);
    const parsed = knobPutSchema.safeParse(body.value);
    if (!parsed.success) return c.json({ error: "invalid body", issues: issuesOf(parsed.error) }, 400);
    const { path, value } = parsed.data;
    if (isExcluded(path)) {
      const why = excludedLeaves().find((e) => e.path === path)?.why ?? "not changeable while running";
      return c.json({ error: "knob cannot be changed live", issues: [`${path}: ${why}`] }, 400);
    }
    const spec = knobSpec(path);
    if (!spec) return c.json({ error: "unknown knob", issues: [`${path}: no such knob`] }, 400);
    if (!("value" in (body.value as object)))
      return c.json({ error: "invalid body", issues: ["value: required"] }, 400);
    const check = config.check(path, value);
    if (!check.ok)
      return c.json(
        { error: "invalid value", issues: check.issues.map((i) => `${i.path}: ${i.message}`).slice(0, 20) },
        400,
      );
    store.setKnobOverride(path, value, parsed.data.by ?? "admin", now());
    const applied = config.trySet(path, value);
    if (!applied.ok) {
      store.deleteKnobOverride(path);
      return c.json(
        { error: "invalid value", issues: applied.issues.map((i) => `${i.path}: ${i.message}`) },
        400,
      );
    }
    log(`knob ${path} set by ${parsed.data.by ?? "admin"}`);
    return c.json({ path, value: displayValue(spec, getPath(applied.config, path)) });
  });

  api.delete("/api/knobs/:path", (c) => {
    const path = c.req.param("path");
    const spec = knobSpec(path);
    if (!spec) return c.json({ error: "unknown knob", issues: [`${path}: no such knob`] }, 400);
    const r = config.tryReset(path);
    if (!r.ok)
      return c.json(
        { error: "reset would be invalid", issues: r.issues.map((i) => `${i.path}: ${i.message}`) },
        400,
      );
    store.deleteKnobOverride(path);
    return c.json({ path, value: displayValue(spec, getPath(r.config, path)) });
  });

  api.route("/", sessionRoutes({ store, config, now, log, liveWindow }));
  for (const sub of deps.adminApps ?? []) api.route("/", sub);
  app.route("/", api);
  for (const sub of deps.openApps ?? []) app.route("/", sub);
  return app;
}

/**
 * Stores a validated /progress body in one transaction: every fresh
 * transition is planned (router-ext/modes/plan.ts) with the live knobs from
 * what the store holds, and applied with its effects; the open directives for
 * the reporting plugin come back with it.
 */
export function ingest(
  deps: Pick<AppDeps, "store" | "config">,
  messages: ProgressMessage[],
  at: number,
): IngestResult {
  const cfg = deps.config.get();
  const knobs = planKnobs(cfg);
  return deps.store.ingest(messages, {
    now: at,
    plan: (ctx, t) => planTransition(ctx, t, knobs, at),
    directiveMaxAgeMs: cfg.progress.recover_window,
    pluginLiveMs: knobs.liveWindowMs,
  });
}
