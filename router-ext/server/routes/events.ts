// GET /api/events ?limit=1..10000 (100): the newest stored events, and the
// router's own (starts, outages).
import { Hono } from "hono";
import type { EventsResponse } from "../../api/schemas.ts";
import type { RouteDeps } from "./deps.ts";

/** @example app.route("/", eventRoutes(routeDeps)); */
export function eventRoutes(d: RouteDeps): Hono {
  const app = new Hono();
  app.get("/api/events", async (c) => {
    const raw = c.req.query("limit");
    const limit = raw === undefined ? 100 : Number(raw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
      return c.json({ error: "invalid query", issues: ["limit: an integer from 1 to 10000"] }, 400);
    return c.json({
      events: await d.store.events(limit),
      router_events: await d.store.routerEvents(limit),
    } satisfies EventsResponse);
  });
  return app;
}
