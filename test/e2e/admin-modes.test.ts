import { describe, expect, it } from "vitest";
import { artifact, type Json, useAdminEnv } from "../helpers/admin-browser.ts";
import { transition } from "../helpers/wire-fixtures.ts";

const TOKEN = "admin-modes-token-0123456789";
const ROOT = "ses_modes_root";
const WORKER = "ses_modes_worker";
const UNWATCHED = "ses_modes_nopl";

describe("auto_recover in the admin page (real Chromium, real gate)", () => {
  const env = useAdminEnv(TOKEN, "watchdog:\n  enabled: false\nprogress:\n  mode: auto_recover\n", {
    reply: "running again",
  });
  const srv = () => env.srv;

  const api = env.api;
  const chat = async (session: string, parent: string | null) => {
    const { res, body } = await env.chat({
      "x-router-conversation": session,
      ...(parent ? { "x-router-parent": parent } : {}),
    });
    return { status: res.status, body: body as Json };
  };
  const counter = async (name: string) =>
    Number(new RegExp(`^${name} (\\d+)$`, "m").exec(await (await fetch(`${srv().url}/metrics`)).text())?.[1]);

  it("marks what the mode cannot act on; a hard stop holds the tree until Resume is clicked", async () => {
    const t0 = Date.now() - 60_000;
    // Only the watchdog saw this session: auto_recover cannot abort or compact it.
    await api(
      "POST",
      "/progress",
      transition(UNWATCHED, null, "build", "ok", "looping", t0, { source: "watchdog", id: `w:${UNWATCHED}` }),
    );
    // The owner's cap is reached at once (max_recoveries 0): the next detection is the hard stop.
    await api("PUT", "/api/knobs", { path: "progress.max_recoveries", value: 0 });
    const seeded = await api(
      "POST",
      "/progress",
      transition(WORKER, ROOT, "sisyphus-junior", "ok", "looping", t0 + 1000, {
        top_target: "read src/app.ts",
        top_target_count: 30,
      }),
    );
    expect(seeded.accepted).toBe(1);
    expect(seeded.directives).toEqual([]); // nothing restarts a hard-stopped tree

    const rows: Json = await api("GET", "/api/sessions");
    const unwatched = rows.sessions.find((r: Json) => r.session_id === UNWATCHED);
    expect(unwatched.cannot_act).toBe("auto_recover needs a live plugin to abort and compact");
    const worker = rows.sessions.find((r: Json) => r.session_id === WORKER);
    expect(worker).toMatchObject({
      stage: "stopped",
      refused: true,
      stopped_by: "stallguard",
      cannot_act: null,
    });

    // The whole tree is refused: the worker and its root, retries counted once per session.
    const before = await counter("stallguard_refused_conversations_total");
    for (let i = 0; i < 3; i++) expect((await chat(WORKER, ROOT)).status).toBe(403);
    expect((await chat(ROOT, null)).status).toBe(403);
    expect(env.model.requests).toHaveLength(0);
    expect(await counter("stallguard_refused_conversations_total")).toBe(before + 2);

    const page = await env.openPage(`#token=${TOKEN}`);
    const cell = page.locator(`tr[data-session="${UNWATCHED}"] td[data-cannot-act]`);
    await cell.waitFor();
    expect(await cell.textContent()).toContain("cannot act: auto_recover needs a live plugin");
    const tree = page.locator(`tbody[data-root="${ROOT}"]`);
    await tree.locator('[data-state="stopped"]').waitFor();
    expect(await tree.locator(`tr[data-session="${WORKER}"]`).getAttribute("data-verdict")).toBe("looping");
    await page.screenshot({ path: artifact("admin-hard-stop.png") });

    await tree.locator("button.resume").click();
    await tree.locator('[data-state="running"]').waitFor();
    const again = await chat(WORKER, ROOT);
    expect(again.status).toBe(200);
    expect(again.body.choices[0].message.content).toBe("running again");
    expect(env.model.requests).toHaveLength(1);
    await page.screenshot({ path: artifact("admin-hard-stop-resumed.png") });
    await page.close();
    expect(env.problems).toEqual([]);
  });
});
