import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { validateConfig } from "../../shared/index.ts";
import { type Hook, startHook } from "../../test/helpers/hook.ts";
import { createNotifier } from "./index.ts";
import { notifierRoutes } from "./routes.ts";
import type { Notifier } from "./types.ts";

let hook: Hook<unknown>;
let url: string;
let notifier: Notifier;
let bodies: unknown[] = [];

beforeAll(async () => {
  hook = await startHook({ status: (path) => (path === "/fail" ? 500 : 200) });
  bodies = hook.bodies;
  url = hook.base;
  const r = validateConfig({
    notifications: {
      channels: [
        { name: "hook", type: "webhook", url: `${url}/ok` },
        { name: "broken", type: "webhook", url: `${url}/fail`, enabled: false },
        { name: "pd", type: "pagerduty", routing_key_env: "PD_KEY", events_url: `${url}/pd` },
      ],
    },
  });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  notifier = createNotifier(r.config.notifications, {
    env: { PD_KEY: "secret-routing-key" },
    log: () => {},
    retryDelayMs: 1,
    startupDiagnostics: false,
  });
});

afterAll(async () => {
  await notifier?.close();
  await hook.close();
});

const app = () => notifierRoutes(notifier);
const json = (body: unknown) => ({
  method: "PATCH",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});

describe("notifierRoutes", () => {
  it("GET /api/channels lists settings, counters and problems, never a secret", async () => {
    const res = await app().request("/api/channels");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { channels: Array<Record<string, unknown>> };
    expect(body.channels.map((c) => [c.name, c.type, c.enabled, c.min_severity])).toEqual([
      ["hook", "webhook", true, "warning"],
      ["broken", "webhook", false, "warning"],
      ["pd", "pagerduty", true, "critical"],
    ]);
    expect(body.channels[0]).toMatchObject({ problems: [], counters: { sent: 0 } });
    expect(JSON.stringify(body)).not.toContain("secret-routing-key");
  });

  it("PATCH /api/channels/:name changes enabled and min_severity", async () => {
    const res = await app().request(
      "/api/channels/broken",
      json({ enabled: true, min_severity: "critical" }),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      channel: { name: "broken", enabled: true, min_severity: "critical" },
    });
    expect(notifier.channels()[1]).toMatchObject({ enabled: true, min_severity: "critical" });
  });

  it.each([
    [{ enabled: "yes" }, "enabled"],
    [{ min_severity: "loud" }, "min_severity"],
    [{ rate_limit: 3 }, "rate_limit"],
  ])("PATCH rejects %j with a 400 naming %s", async (body, path) => {
    const res = await app().request("/api/channels/hook", json(body));
    expect(res.status).toBe(400);
    const out = (await res.json()) as { issues: Array<{ path: string }> };
    expect(out.issues.map((i) => i.path)).toEqual([path]);
  });

  it("PATCH answers 400 on a non-JSON body and 404 on an unknown channel", async () => {
    const bad = await app().request("/api/channels/hook", { method: "PATCH", body: "{" });
    expect(bad.status).toBe(400);
    const missing = await app().request("/api/channels/nope", json({ enabled: false }));
    expect(missing.status).toBe(404);
  });

  it("POST /api/channels/:name/test sends now and returns the delivery (502 on failure)", async () => {
    const ok = await app().request("/api/channels/hook/test", { method: "POST" });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ delivery: { channel: "hook", ok: true, source: "test" } });
    expect(bodies.at(-1)).toMatchObject({ source: "test", dedup_key: "stallguard-test-hook" });
    const bad = await app().request("/api/channels/broken/test", { method: "POST" });
    expect(bad.status).toBe(502);
    expect(await bad.json()).toMatchObject({
      error: "test alert failed: HTTP 500 Internal Server Error",
      delivery: { ok: false, attempts: 2 },
    });
    expect((await app().request("/api/channels/nope/test", { method: "POST" })).status).toBe(404);
  });

  it("GET /api/deliveries returns records newest first, limited", async () => {
    const res = await app().request("/api/deliveries?limit=1");
    const body = (await res.json()) as { deliveries: Array<{ channel: string }> };
    expect(body.deliveries.map((d) => d.channel)).toEqual(["broken"]);
    const all = (await (await app().request("/api/deliveries?limit=junk")).json()) as {
      deliveries: unknown[];
    };
    expect(all.deliveries).toHaveLength(2);
  });
});
