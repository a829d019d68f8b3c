// The breaker's admin API, mounted behind the admin token with the other /api routes:
//   GET  /api/breaker                 {enabled, window_ms, models[], trips[] (with evidence)}
//   POST /api/breaker/:model/resume   {by?} -> {model, phase: "closed", by, at}
// A model name with a slash travels percent-encoded (openrouter%2Fz-ai%2Fglm).

import { Hono } from "hono";
import { z } from "zod";
import type { BreakerResponse } from "../api/schemas.ts";
import { byName, issuesOf, validBody } from "../server/admin-body.ts";
import type { BreakerService } from "./service.ts";

const resumeSchema = z.strictObject({ by: byName.optional() });
const modelSchema = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[\x21-\x7e]+$/, "printable ASCII without spaces");
const limitSchema = z.coerce.number().int().min(1).max(1000);

export function breakerRoutes(service: BreakerService): Hono {
  const app = new Hono();

  app.get("/api/breaker", async (c) => {
    const raw = c.req.query("limit");
    const limit = raw === undefined ? { success: true as const, data: 100 } : limitSchema.safeParse(raw);
    if (!limit.success)
      return c.json({ error: "invalid query", issues: ["limit: an integer from 1 to 1000"] }, 400);
    return c.json((await service.view(undefined, limit.data)) satisfies BreakerResponse);
  });

  app.post("/api/breaker/:model/resume", async (c) => {
    const model = modelSchema.safeParse(c.req.param("model"));
    if (!model.success) return c.json({ error: "invalid model", issues: issuesOf(model.error) }, 400);
    const body = await validBody(c, resumeSchema);
    if (!body.ok) return body.answer;
    const by = body.data.by ?? "admin";
    const s = await service.resume(model.data, by);
    return c.json({ model: s.model, phase: s.phase, by, at: s.resumedAt });
  });

  return app;
}
