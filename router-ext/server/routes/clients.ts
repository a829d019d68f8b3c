// GET /api/clients: the gate's requests per client key within the retention,
// and the names of the configured keys.
import { Hono } from "hono";
import type { ClientsResponse } from "../../api/schemas.ts";
import type { RouteDeps } from "./deps.ts";

/** @example app.route("/", clientRoutes({ ...routeDeps, clientNames: ["default"] })); */
export function clientRoutes(d: RouteDeps & { clientNames: readonly string[] }): Hono {
  const app = new Hono();
  app.get("/api/clients", async (c) => {
    // The store writes the gate's waiting batch first, so its latest requests are counted.
    return c.json({
      clients: await d.store.clientUsage(d.now() - d.config.get().progress.retention),
      configured: [...d.clientNames],
    } satisfies ClientsResponse);
  });
  return app;
}
