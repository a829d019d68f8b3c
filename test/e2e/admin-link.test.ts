// The readout of the link between plugins, gate and router (real router on a
// real SQLite file, real Chromium): a router that was down is an event in
// the page's recent events and in /api/events; a plugin whose headers reach
// the gate while its reports do not is "headers only", and the header line
// names the URL it reports to.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { artifact, type Json, launchChromium } from "../helpers/admin-browser.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { QUIET_LOCAL_YAML, startTestRouter } from "../helpers/test-router.ts";

const TOKEN = "admin-link-token-0123456789";
const DOWN_MS = 150_000;

describe("admin page: router outages and plugins that do not report", () => {
  let tmp: string;
  let model: ModelServer;
  let srv: RunningServer;
  let context: BrowserContext;
  const start = (over: { port?: number; now?: () => number } = {}) =>
    startTestRouter(tmp, QUIET_LOCAL_YAML, {
      upstream: model.url,
      env: routerEnv(tmp, { STALLGUARD_ADMIN_TOKEN: TOKEN }),
      ...over,
    });
  const api = async (path: string): Promise<Json> => {
    const res = await fetch(`${srv.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    return res.json();
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "sg-admin-link-"));
    model = await startModelServer({ script: () => ({ kind: "text", text: "ok" }) });
    // A first run that lived 2.5 minutes ago (its clock is behind), stopped cleanly,
    srv = await start({ now: () => Date.now() - DOWN_MS });
    const port = srv.port;
    await srv.close();
    // then the router comes back on the same database and port.
    srv = await start({ port });
    context = await launchChromium(join(tmp, "chromium-profile"));
  }, 120_000);
  afterAll(async () => {
    await context?.close();
    await srv?.close();
    await model?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("the outage is in /api/events and in the page's recent events", async () => {
    const body = await api("/api/events");
    expect(body.router_events).toHaveLength(1);
    const down = body.router_events[0];
    expect(down).toMatchObject({ kind: "down", clean: true });
    expect(down.to - down.from).toBeGreaterThanOrEqual(DOWN_MS - 5000);

    // A plugin whose headers reach the gate but whose reports go to a router that is not there.
    const headers = {
      "content-type": "application/json",
      authorization: `Bearer ${srv.clientKeys[0]?.key}`,
      "x-router-conversation": "ses_headers_only",
      "x-router-agent": "build",
      "x-stallguard-plugin": "0.1.0",
      "x-stallguard-instance": "sg_elsewhere",
      "x-stallguard-report-to": "http://127.0.0.1:4870",
      "x-stallguard-report-state": "failing",
    };
    const res = await fetch(`${srv.url}/v1/chat/completions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "go" }] }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const sessions = await api("/api/sessions");
    expect(sessions.sessions.find((s: Json) => s.session_id === "ses_headers_only")).toMatchObject({
      plugin_live: false,
      plugin_headers: true,
    });

    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(`${srv.url}/admin#token=${TOKEN}`);
    const plugin = page.locator('tr[data-session="ses_headers_only"] td[title^="the gate saw"]');
    await plugin.waitFor();
    expect(await plugin.textContent()).toBe("headers only 0.1.0");
    expect(await page.locator('[data-plugins="headers-only"]').textContent()).toBe(
      "; 1 plugin(s) send headers but do not report: they report to http://127.0.0.1:4870 (its deliveries fail)",
    );
    await page.screenshot({ path: artifact("admin-headers-only.png"), fullPage: true });
    // Recent events are on the activity view.
    await page.goto(`${srv.url}/admin#view=activity`);
    const row = page.locator('tr[data-event-router="down"]');
    await row.waitFor();
    const cells = await row.locator("td").allTextContents();
    expect(cells[3]).toMatch(/^router down 2m (2[5-9]|3\d)s$/);
    expect(cells[4]).toMatch(/^from .+ to .+; it was stopped$/);
    expect(cells[5]).toBe("router");
    await page.screenshot({ path: artifact("admin-router-outage.png"), fullPage: true });
  });
});
