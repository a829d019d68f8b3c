// The sessions API and the marks, mounted by createApp under /api (behind the
// admin token and the browser guard):
//   GET    /api/sessions            ?limit=1..2000 (2000) &offset=0..: every flagged,
//                                   refused or marked session, then a page of the others
//   GET    /api/sessions/:id        everything the session page shows
//   POST   /api/sessions/:id/mark   {kind: "false_alarm" | "confirmed_loop", by?}: any session
//   DELETE /api/sessions/:id/mark   removes the mark (lifted refusals stay lifted)
//   GET    /api/labels              the marks as a calibrate labels document
import { Hono } from "hono";
import { z } from "zod";
import { idSchema } from "../../../shared/index.ts";
import type { SessionsResponse } from "../../api/schemas.ts";
import { type MarkResponse, markKinds, type SessionDetail } from "../../api/session-detail.ts";
import { byName, issuesOf, validBody, validQuery } from "../admin-body.ts";
import type { RouteDeps } from "./deps.ts";

const markSchema = z.strictObject({ kind: z.enum(markKinds), by: byName.optional() });
const pageSchema = z.strictObject({
  limit: z.coerce.number().int().min(1).max(2000).default(2000),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
});

export function sessionRoutes(d: RouteDeps): Hono {
  const app = new Hono();

  app.get("/api/labels", async (c) => c.json(await d.store.labels()));

  app.get("/api/sessions", async (c) => {
    const q = validQuery(c, pageSchema);
    if (!q.ok) return q.answer;
    // The store writes the gate's waiting batch first, so a session it just learnt is listed.
    const page = await d.store.sessionPage({ now: d.now(), liveWindowMs: d.liveWindow(), ...q.data });
    return c.json(page satisfies SessionsResponse);
  });

  app.get("/api/sessions/:id", async (c) => {
    const id = idSchema.safeParse(c.req.param("id"));
    if (!id.success) return c.json({ error: "invalid session id", issues: issuesOf(id.error) }, 400);
    const detail = await d.store.sessionDetail(id.data, {
      now: d.now(),
      liveWindowMs: d.liveWindow(),
      thresholds: { ...d.config.get().thresholds },
    });
    if (!detail) return c.json({ error: `no session ${id.data}` }, 404);
    return c.json(detail satisfies SessionDetail);
  });

  app.post("/api/sessions/:id/mark", async (c) => {
    const id = idSchema.safeParse(c.req.param("id"));
    if (!id.success) return c.json({ error: "invalid session id", issues: issuesOf(id.error) }, 400);
    const body = await validBody(c, markSchema);
    if (!body.ok) return body.answer;
    const { kind, by = "admin" } = body.data;
    const at = d.now();
    const r = await d.store.mark(id.data, kind, by, at);
    if (!r.ok) return c.json({ error: r.error }, r.status);
    const what = r.lifted.length ? `; lifted ${r.lifted.join(", ")}` : r.note ? `; ${r.note}` : "";
    d.log(`session ${id.data}: marked ${kind.replace("_", " ")} by ${by}${what}`);
    return c.json({
      session_id: id.data,
      root_id: r.rootId,
      mark: r.mark,
      lifted: r.lifted,
      note: r.note,
    } satisfies MarkResponse);
  });

  app.delete("/api/sessions/:id/mark", async (c) => {
    const id = idSchema.safeParse(c.req.param("id"));
    if (!id.success) return c.json({ error: "invalid session id", issues: issuesOf(id.error) }, 400);
    const root = await d.store.unmark(id.data);
    if (root === null) return c.json({ error: `no mark on ${id.data}` }, 404);
    d.log(`session ${id.data}: mark removed`);
    return c.json({ session_id: id.data, root_id: root, mark: null, lifted: [] } satisfies MarkResponse);
  });

  return app;
}
