// The notifier's admin API. The server mounts it behind its admin auth.
import { Hono } from "hono";
import { z } from "zod";
import type { ChannelsResponse, DeliveriesResponse } from "../api/schemas.ts";
import { type Notifier, severitySchema } from "./types.ts";

const patchSchema = z.strictObject({
  enabled: z.boolean().optional(),
  min_severity: severitySchema.optional(),
});

function issuesOf(error: z.ZodError): Array<{ path: string; message: string }> {
  return error.issues.flatMap((i) =>
    i.code === "unrecognized_keys"
      ? i.keys.map((k) => ({ path: [...i.path, k].join("."), message: "unknown field" }))
      : [{ path: i.path.join(".") || "(root)", message: i.message }],
  );
}

/**
 * GET /api/channels, PATCH /api/channels/:name, POST /api/channels/:name/test, GET /api/deliveries.
 *
 * @example
 * app.use("/api/*", adminAuth);
 * app.route("/", notifierRoutes(notifier));
 */
export function notifierRoutes(notifier: Notifier): Hono {
  const app = new Hono();

  app.get("/api/channels", async (c) => {
    const diag = new Map((await notifier.diagnostics()).map((d) => [d.channel, d.problems]));
    const channels = notifier.channels().map((ch) => ({ ...ch, problems: diag.get(ch.name) ?? [] }));
    return c.json({ channels } satisfies ChannelsResponse);
  });

  app.patch("/api/channels/:name", async (c) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return c.json({ error: "body must be JSON", issues: [] }, 400);
    }
    const parsed = patchSchema.safeParse(body);
    if (!parsed.success)
      return c.json({ error: "invalid channel patch", issues: issuesOf(parsed.error) }, 400);
    const channel = notifier.setChannel(c.req.param("name"), parsed.data);
    if (!channel) return c.json({ error: "no such channel" }, 404);
    return c.json({ channel });
  });

  app.post("/api/channels/:name/test", async (c) => {
    const delivery = await notifier.test(c.req.param("name"));
    if (!delivery) return c.json({ error: "no such channel" }, 404);
    if (!delivery.ok) return c.json({ error: `test alert failed: ${delivery.error}`, delivery }, 502);
    return c.json({ delivery });
  });

  app.get("/api/deliveries", (c) => {
    const raw = Number(c.req.query("limit") ?? 50);
    const limit = Number.isFinite(raw) ? Math.min(200, Math.max(1, Math.floor(raw))) : 50;
    return c.json({ deliveries: notifier.deliveries(limit) } satisfies DeliveriesResponse);
  });

  return app;
}
