// The knobs an admin changes while the server runs, kept in the database as
// overrides of the config files:
//   GET    /api/knobs        {knobs, excluded (the leaves that need a restart)}
//   PUT    /api/knobs        {path, value, by?}: checked against the whole config, then stored and applied
//   DELETE /api/knobs/:path  back to the files' value
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { KnobView } from "../../api/schemas.ts";
import { byName, issuesOf, jsonBody } from "../admin-body.ts";
import { displayValue, excludedLeaves, getPath, isExcluded, knobSpec, knobViews } from "../knobs.ts";
import type { RouteDeps } from "./deps.ts";

const knobPutSchema = z.strictObject({
  path: z.string().min(1).max(200),
  value: z.unknown(),
  by: byName.optional(),
});

const issueLines = (issues: Array<{ path: string; message: string }>) =>
  issues.map((i) => `${i.path}: ${i.message}`);

/** @example app.route("/", knobRoutes(routeDeps)); */
export function knobRoutes(d: RouteDeps): Hono {
  const app = new Hono();
  app.get("/api/knobs", (c) => {
    const knobs = knobViews(d.config.get(), d.config.overriddenPaths()) satisfies KnobView[];
    return c.json({ knobs, excluded: excludedLeaves() });
  });
  app.put("/api/knobs", (c) => putKnob(d, c));
  app.delete("/api/knobs/:path", async (c) => {
    const path = c.req.param("path");
    const spec = knobSpec(path);
    if (!spec) return c.json({ error: "unknown knob", issues: [`${path}: no such knob`] }, 400);
    const r = d.config.tryReset(path);
    if (!r.ok) return c.json({ error: "reset would be invalid", issues: issueLines(r.issues) }, 400);
    await d.store.deleteKnobOverride(path);
    return c.json({ path, value: displayValue(spec, getPath(r.config, path)) });
  });
  return app;
}

async function putKnob(d: RouteDeps, c: Context): Promise<Response> {
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
  const check = d.config.check(path, value);
  if (!check.ok)
    return c.json({ error: "invalid value", issues: issueLines(check.issues).slice(0, 20) }, 400);
  // Stored first, so a value the config takes is never lost; taken back when it does not.
  await d.store.setKnobOverride(path, value, parsed.data.by ?? "admin", d.now());
  const applied = d.config.trySet(path, value);
  if (!applied.ok) {
    await d.store.deleteKnobOverride(path);
    return c.json({ error: "invalid value", issues: issueLines(applied.issues) }, 400);
  }
  d.log(`knob ${path} set by ${parsed.data.by ?? "admin"}`);
  return c.json({ path, value: displayValue(spec, getPath(applied.config, path)) });
}
