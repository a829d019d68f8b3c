// GET /metrics: the aggregate series are public; the per-session ones name
// sessions, agents and targets, so they need the admin token unless
// server.public_session_metrics makes them public. A wrong token is 401.
import { Hono } from "hono";
import { withLabel } from "../../prom-text.ts";
import { renderMetrics, WARNING_SERIES_MAX } from "../metrics.ts";
import type { Rejections } from "../rejections.ts";
import { requireToken, type TokenVariables } from "../require-token.ts";
import type { RouteDeps } from "./deps.ts";

export interface MetricsDeps extends RouteDeps {
  adminToken: string;
  rejections: Rejections;
  /** Further Prometheus text (the gate's histograms, the breaker). */
  extraMetrics?: () => string[];
  /** Set when replicas share the database: every sample says which one answered. */
  replica?: string;
}

/** @example app.route("/", metricsRoutes({ ...routeDeps, adminToken, rejections })); */
export function metricsRoutes(d: MetricsDeps): Hono<{ Variables: TokenVariables }> {
  const app = new Hono<{ Variables: TokenVariables }>();
  const token = requireToken({
    token: d.adminToken,
    error: "wrong admin token (or send none for the aggregate series)",
    optional: true,
  });
  app.get("/metrics", token, async (c) => {
    const perSession = c.var.tokenOk || d.config.get().server.public_session_metrics;
    const snapshot = await d.store.metrics({ now: d.now(), liveWindowMs: d.liveWindow() });
    let extra: string[] = [];
    try {
      extra = d.extraMetrics?.() ?? [];
    } catch (err) {
      d.log(`metrics: extra metrics failed: ${(err as Error).message}`);
    }
    const flagged = perSession
      ? await d.store.flaggedSessions({
          now: d.now(),
          liveWindowMs: d.liveWindow(),
          limit: WARNING_SERIES_MAX,
        })
      : null;
    extra = [...extra, `${[...d.rejections.render(), ...d.store.writes.render()].join("\n")}\n`];
    const text = renderMetrics(snapshot, flagged, extra);
    return c.body(d.replica ? withLabel(text, "replica", d.replica) : text, 200, {
      "content-type": "text/plain; version=0.0.4; charset=utf-8",
    });
  });
  return app;
}
