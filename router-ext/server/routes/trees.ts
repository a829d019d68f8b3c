// The session trees an admin or a hard stop refused:
//   GET  /api/trees               {trees (refused now), log (the last 100 refusals)}
//   POST /api/trees/:root/stop    {by?}: the gate refuses the whole tree until Resume
//   POST /api/trees/:root/resume  {by?}
import { type Context, Hono } from "hono";
import { z } from "zod";
import { idSchema } from "../../../shared/index.ts";
import type { TreesResponse } from "../../api/schemas.ts";
import { byName, issuesOf, validBody } from "../admin-body.ts";
import type { RouteDeps } from "./deps.ts";

const treeActionSchema = z.strictObject({ by: byName.optional() });

/** @example app.route("/", treeRoutes(routeDeps)); */
export function treeRoutes(d: RouteDeps): Hono {
  const app = new Hono();
  app.get("/api/trees", async (c) =>
    c.json({
      trees: (await d.store.refusals()).filter((r) => r.scope === "tree"),
      log: await d.store.refusalLog(100),
    } satisfies TreesResponse),
  );
  app.post("/api/trees/:root/stop", treeAction(d, "stopped"));
  app.post("/api/trees/:root/resume", treeAction(d, "running"));
  return app;
}

function treeAction(d: RouteDeps, state: "stopped" | "running") {
  return async (c: Context) => {
    const root = idSchema.safeParse(c.req.param("root"));
    if (!root.success) return c.json({ error: "invalid tree id", issues: issuesOf(root.error) }, 400);
    const body = await validBody(c, treeActionSchema);
    if (!body.ok) return body.answer;
    const by = body.data.by ?? "admin";
    const at = d.now();
    await d.store.setRefusal(
      "tree",
      root.data,
      state,
      by,
      at,
      state === "stopped" ? "admin Stop" : "admin Resume",
    );
    d.log(`tree ${root.data}: ${state === "stopped" ? "stopped" : "resumed"} by ${by}`);
    return c.json({ root_id: root.data, state, by, at });
  };
}
