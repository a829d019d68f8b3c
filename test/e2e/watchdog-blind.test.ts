// The router's "watchdog is blind" alert, end to end: a real server with a real
// webhook channel (a node:http receiver on loopback) gets watchdog ticks on
// POST /progress as the watchdog sends them. A tick that found opencode but
// could not read its sessions raises one alert per blind spell; a tick that
// reads sessions again resolves it; no opencode at all is not an alarm, and
// neither is a readable (or absent) opencode.db; an unreadable one is.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { type Hook, startHook, webhookConfig } from "../helpers/hook.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { startTestRouter } from "../helpers/test-router.ts";

const ADMIN = "blind-admin-token-0123456789";

describe("watchdog blind alert", () => {
  let dir: string;
  let srv: RunningServer;
  let hook: Hook<{ title: string; state: string; source: string; at: number }>;
  let received: Hook<{ title: string; state: string; source: string; at: number }>["bodies"] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-blind-"));
    hook = await startHook();
    received = hook.bodies;
    // No quiet window: each test raises the same alert (dedup key) again within minutes.
    srv = await startTestRouter(dir, webhookConfig(hook.url, ["quiet_window: 0s"]), {
      env: routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN }),
    });
  });

  afterAll(async () => {
    await srv?.close();
    await hook?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const tick = async (at: number, servers: number, blind: boolean, db?: string) => {
    const res = await fetch(`${srv.url}/progress`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${srv.pluginToken}` },
      body: JSON.stringify({
        type: "watchdog_tick",
        at,
        servers,
        sessions: blind ? 0 : 3,
        flagged: 0,
        blind,
        ...(db ? { db } : {}),
      }),
    });
    // The server judges a stored tick before it answers, and queues any alert in order.
    expect(res.status).toBe(200);
  };

  test("blind while opencode runs: one alert, then one resolve; no server is silent", async () => {
    const t0 = Date.now();
    await tick(t0, 0, true); // nothing runs: not an alarm
    await tick(t0 + 1, 1, true);
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(1);
    expect(received[0]).toMatchObject({
      title: "stallguard: the watchdog is blind",
      state: "trigger",
      source: "watchdog",
    });
    await tick(t0 + 2, 1, true); // still blind: not repeated
    await tick(t0 + 3, 1, false);
    // The channel delivers in order: once the resolve is in, anything queued before it is too.
    await expect.poll(() => received.at(-1)?.state, { timeout: 10_000 }).toBe("resolve");
    // The trigger is the first tick that found opencode (the one with no server raised nothing).
    expect(received.map((r) => `${r.state} ${r.source} ${r.at - t0}`)).toEqual([
      "trigger watchdog 1",
      "resolve watchdog 3",
    ]);
  });

  test("opencode.db: readable or absent is quiet; unreadable is blind with no server at all", async () => {
    const before = received.length;
    const t0 = Date.now() + 10_000;
    await tick(t0, 0, false, "missing");
    await tick(t0 + 1, 0, false, "read");
    await tick(t0 + 2, 0, true, "unreadable");
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(before + 1);
    await tick(t0 + 3, 0, false, "read");
    await expect.poll(() => received.at(-1)?.state, { timeout: 10_000 }).toBe("resolve");
    expect(received.slice(before).map((r) => `${r.state} ${r.at - t0}`)).toEqual(["trigger 2", "resolve 3"]);
    expect(received[before]).toMatchObject({
      title: "stallguard: the watchdog is blind",
      source: "watchdog",
    });
  });
});
