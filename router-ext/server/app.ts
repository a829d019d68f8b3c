// The router extension's HTTP app, a table of routes: POST /progress,
// /health, /metrics and the admin API, each a sub-app in routes/<resource>.ts.
// Every request passes the browser guard first; everything under /api/ needs
// the admin token. No listen and no database open here (start.ts does both),
// so tests drive it with app.request() or through a real server alike.
import type { Hono as HonoType } from "hono";
import { Hono } from "hono";
import type { ProgressMessage } from "../../shared/index.ts";
import type { ProgressResult } from "../db/store-progress.ts";
import { isUnavailable } from "../db/unavailable.ts";
import type { RouterStore } from "../store/router-store.ts";
import { browserGuard } from "./browser-guard.ts";
import type { LiveConfig } from "./live-config.ts";
import { countRefusals, Rejections } from "./rejections.ts";
import { requireToken } from "./require-token.ts";
import { clientRoutes } from "./routes/clients.ts";
import type { RouteDeps } from "./routes/deps.ts";
import { eventRoutes } from "./routes/events.ts";
import { healthRoutes } from "./routes/health.ts";
import { knobRoutes } from "./routes/knobs.ts";
import { metricsRoutes } from "./routes/metrics.ts";
import { progressRoutes } from "./routes/progress.ts";
import { sessionRoutes } from "./routes/sessions.ts";
import { treeRoutes } from "./routes/trees.ts";

export interface AppDeps {
  store: RouterStore;
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
  afterStored?: (result: ProgressResult, messages: ProgressMessage[]) => void;
  /** Further Prometheus text for /metrics (the gate's histograms). */
  extraMetrics?: () => string[];
  /** Which replica answers (several serve one PostgreSQL database): a label on every /metrics sample. */
  replica?: string;
  /** Sub-apps mounted behind the admin token (their routes must start with /api/). */
  adminApps?: HonoType[];
  /** Sub-apps mounted as they are (the gate's GET /gate/:session, the admin page). */
  openApps?: HonoType[];
  /**
   * The in-memory count of refused requests, shared with the gate's proxy,
   * which serves /v1 in front of this app (gate/mount.ts) and counts its own.
   */
  rejections?: Rejections;
}

const ADMIN_TOKEN_ERROR = "admin token required: Authorization: Bearer <token>";

/**
 * @example
 * const app = createApp({ store, config, adminToken, pluginToken, version: "dev" });
 * const res = await app.request("/health");
 */
export function createApp(deps: AppDeps): Hono {
  const { store, config } = deps;
  const d: RouteDeps = {
    store,
    config,
    now: deps.now ?? Date.now,
    log: deps.log ?? (() => {}),
    liveWindow: () => 3 * config.get().progress.heartbeat,
  };
  const rejections = deps.rejections ?? new Rejections();
  const app = new Hono();

  app.use(
    "*",
    browserGuard(() => config.get().server.host),
  );
  // Counted in memory: a refused request writes nothing to the database, not even a counter.
  app.use("*", countRefusals(rejections));
  app.use("/api/*", requireToken({ token: deps.adminToken, error: ADMIN_TOKEN_ERROR }));
  app.onError((err, c) => {
    d.log(`error: ${c.req.method} ${c.req.path}: ${err.message}`);
    // A write the database refused (locked, full, read-only) was not done: say so, and when to retry.
    if (isUnavailable(err))
      return c.json({ error: "database cannot be written, retry" }, 503, { "retry-after": "1" });
    return c.json({ error: "internal error" }, 500);
  });
  app.notFound((c) => c.json({ error: "not found" }, 404));

  app.route("/", progressRoutes({ ...d, pluginToken: deps.pluginToken, afterStored: deps.afterStored }));
  app.route("/", healthRoutes({ ...d, version: deps.version }));
  app.route(
    "/",
    metricsRoutes({
      ...d,
      adminToken: deps.adminToken,
      rejections,
      extraMetrics: deps.extraMetrics,
      replica: deps.replica,
    }),
  );
  // The admin API, behind the token above.
  app.route("/", eventRoutes(d));
  app.route("/", clientRoutes({ ...d, clientNames: deps.clientNames ?? [] }));
  app.route("/", treeRoutes(d));
  app.route("/", knobRoutes(d));
  app.route("/", sessionRoutes(d));
  for (const sub of deps.adminApps ?? []) app.route("/", sub);
  for (const sub of deps.openApps ?? []) app.route("/", sub);
  return app;
}
