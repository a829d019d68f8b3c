import { describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { artifact, expectNumbersUnderHeaders, type Json, useAdminEnv } from "../helpers/admin-browser.ts";
import { heartbeatSession, signals, transition } from "../helpers/wire-fixtures.ts";

const TOKEN = "admin-e2e-token-0123456789";
const ROOT = "ses_admin_root";
const CHILD = "ses_admin_child";
const OTHER = "ses_admin_other";
const TARGET = "read src/nav/navbar.ts";

describe("admin page (real Chromium, real server)", () => {
  const env = useAdminEnv(TOKEN, "watchdog:\n  enabled: false\n", { reply: "running again" });
  const srv = () => env.srv;

  const api = env.api;

  /** One chat request through the gate, as the child session's opencode would send it. */
  const chatAsChild = async () => {
    const { res, body } = await env.chat({ "x-router-conversation": CHILD, "x-router-parent": ROOT });
    return { status: res.status, body: body as Json };
  };

  it("shows a stopped looping tree, and Resume lets it run again", async () => {
    const t0 = Date.now() - 60_000;
    const report = `[router] A sub-agent stalled.\n  session: ${CHILD} (sisyphus-junior), child of ${ROOT}\n  most repeated: ${TARGET} x31`;
    const seeded = await api("POST", "/progress", [
      transition(ROOT, null, "atlas", "ok", "stalling", t0),
      transition(ROOT, null, "atlas", "stalling", "ok", t0 + 1000),
      transition(CHILD, ROOT, "sisyphus-junior", "ok", "stalling", t0 + 2000, {
        top_target: TARGET,
        top_target_count: 12,
      }),
      transition(CHILD, ROOT, "sisyphus-junior", "stalling", "looping", t0 + 3000, {
        top_target: TARGET,
        top_target_count: 31,
        signals: signals({ turns_since_landed: 27, usd_since_landed: 1.84, context_tokens: 120_345 }),
        report,
      }),
      transition(OTHER, null, "build", "ok", "stalling", t0 + 4000, { root_id: OTHER }),
    ]);
    expect(seeded.accepted).toBe(5);
    const stopped = await api("POST", `/api/trees/${ROOT}/stop`, { by: "admin" });
    expect(stopped).toMatchObject({ root_id: ROOT, state: "stopped", by: "admin" });

    // Stopped: the gate refuses the child (the tree's scope) and nothing reaches the model.
    const refused = await chatAsChild();
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toContain(`stallguard stopped session ${CHILD} (tree ${ROOT})`);
    expect(env.model.requests).toHaveLength(0);

    const page = await env.openPage(`#token=${TOKEN}`);
    const tree = page.locator(`tbody[data-root="${ROOT}"]`);
    const child = tree.locator(`tr[data-session="${CHILD}"]`);
    await child.waitFor();
    // The token left the address bar as soon as the script read it.
    expect(page.url()).toBe(`${srv().url}/admin`);
    expect(await child.getAttribute("data-verdict")).toBe("looping");
    await expect.poll(() => child.locator("td.verdict").textContent()).toContain("looping");
    expect(await child.locator("td.target").textContent()).toBe(`${TARGET} x31`);
    expect(await child.locator("td").nth(1).textContent()).toBe("sisyphus-junior");
    // Root first, child indented under it; the root's cleared flag still shows.
    expect(
      await tree.locator("tr.session").evaluateAll((rows) => rows.map((r) => r.getAttribute("data-session"))),
    ).toEqual([ROOT, CHILD]);
    const rootRow = tree.locator(`tr[data-session="${ROOT}"]`);
    expect(await rootRow.getAttribute("data-verdict")).toBe("ok");
    expect(await rootRow.locator("td.verdict").textContent()).toContain("worst stalling, flagged 1x");
    expect(await tree.locator("[data-state]").getAttribute("data-state")).toBe("stopped");
    expect(await tree.locator("button.resume").isEnabled()).toBe(true);
    expect(await tree.locator("button.stop").isDisabled()).toBe(true);
    // The other tree is running and untouched.
    expect(await page.locator(`tbody[data-root="${OTHER}"] [data-state]`).getAttribute("data-state")).toBe(
      "running",
    );
    await page.screenshot({ path: artifact("admin-sessions.png") });
    // The session page (a click on the session) has the incident report; back to the readout.
    await child.locator("a.session-link").click();
    expect(await page.locator("#session-report").textContent()).toBe(report);
    expect(page.url()).toBe(`${srv().url}/admin#view=session&id=${CHILD}`);
    await page.locator("a.back").click();
    await tree.locator("button.resume").waitFor();

    await tree.locator("button.resume").click();
    await tree.locator('[data-state="running"]').waitFor();
    const after: Json = await api("GET", "/api/sessions");
    const inTree = after.sessions.filter((s: Json) => s.root_id === ROOT);
    expect(inTree.map((s: Json) => s.session_id).sort()).toEqual([CHILD, ROOT].sort());
    expect(inTree.every((s: Json) => s.refused === false)).toBe(true);
    const trees: Json = await api("GET", "/api/trees");
    expect(trees.trees.find((t: Json) => t.key === ROOT)).toMatchObject({ state: "running", by: "admin" });
    // Resumed: the gate lets the same session through to the model again.
    const allowedAgain = await chatAsChild();
    expect(allowedAgain.status).toBe(200);
    expect(allowedAgain.body.choices[0].message.content).toBe("running again");
    expect(env.model.requests).toHaveLength(1);
    // The Client keys section names the key each request presented (the refused one and the one let through).
    const clientRow = page.locator('#clients tr[data-client="default"]');
    await expect.poll(() => clientRow.locator("td").nth(1).textContent(), { timeout: 10_000 }).toBe("2");
    expect(await clientRow.locator("td").nth(2).textContent()).toBe("1");
    // Numbers sit under their headers, right-aligned with them, here and in the readout.
    await expectNumbersUnderHeaders(page, "#clients table.clients", [
      "requests",
      "refused",
      "failed streams",
      "spend",
    ]);
    await expectNumbersUnderHeaders(page, "#sessions-table", [
      "calls",
      "turns since landed",
      "$ since landed",
      "context tokens",
    ]);
    await page.screenshot({ path: artifact("admin-sessions-resumed.png") });

    // Auto-refresh: a verdict reported while the page is open shows up without a click.
    await api(
      "POST",
      "/progress",
      transition(OTHER, null, "build", "stalling", "looping", t0 + 5000, { root_id: OTHER }),
    );
    await page.locator(`tr[data-session="${OTHER}"][data-verdict="looping"]`).waitFor();
    await page.close();

    // The token was kept in IndexedDB: plain /admin works without the fragment.
    const again = await env.openPage("");
    await again.locator(`tbody[data-root="${ROOT}"] [data-state="running"]`).waitFor();
    expect(await again.locator("#auth").isHidden()).toBe(true);
    await again.close();

    // A wrong token is a clear 401 with the prompt; entering the right one recovers.
    const bad = await env.openPage("#token=not-the-token");
    await bad.locator("#auth").waitFor({ state: "visible" });
    expect(await bad.locator("#auth-message").textContent()).toMatch(/^401: .*rejected/);
    expect(await bad.locator("#app").isHidden()).toBe(true);
    await bad.locator("#token-input").fill(TOKEN);
    await bad.locator("#auth-form button[type=submit]").click();
    await bad.locator(`tbody[data-root="${ROOT}"]`).waitFor();
    await bad.close();
    expect(env.problems).toEqual([]);
  });

  it("edits a knob: a bad value shows the server's error, a good one persists", async () => {
    const page = await env.openPage("#view=knobs");
    const row = page.locator('[data-knob="thresholds.top_warn"]');
    const input = row.locator("input");
    await input.waitFor();
    const shipped = configSchema.parse({}).thresholds.top_warn;
    expect(await input.inputValue()).toBe(String(shipped));
    expect(await row.locator(".changed").isHidden()).toBe(true);

    await input.fill("1");
    await input.press("Tab");
    const error = row.locator(".knob-error");
    await expect.poll(() => error.textContent()).toMatch(/thresholds\.top_warn: .*2/);
    expect(await input.getAttribute("aria-invalid")).toBe("true");
    const unchanged: Json = await api("GET", "/api/knobs");
    expect(unchanged.knobs.find((k: Json) => k.path === "thresholds.top_warn").value).toBe(shipped);

    await input.fill(String(shipped + 1));
    await input.press("Tab");
    await expect.poll(() => row.locator(".knob-status").textContent()).toBe("saved");
    expect(await error.textContent()).toBe("");
    const knobs: Json = await api("GET", "/api/knobs");
    expect(knobs.knobs.find((k: Json) => k.path === "thresholds.top_warn")).toMatchObject({
      value: shipped + 1,
      overridden: true,
    });
    // Changed from the default: marked so; the Sessions readout is not on this page.
    expect(await row.locator(".changed").isVisible()).toBe(true);
    expect(await page.locator("#sessions").isHidden()).toBe(true);

    // A duration knob takes text such as "90s"; the excluded knobs are listed with a reason.
    const interval = page.locator('[data-knob="watchdog.interval"] input');
    await interval.fill("90s");
    await interval.press("Tab");
    await expect
      .poll(() => page.locator('[data-knob="watchdog.interval"] .knob-status').textContent())
      .toBe("saved");
    expect(await page.locator('[data-excluded="server.port"] td.desc').textContent()).not.toBe("");

    await page.screenshot({ path: artifact("admin-knobs.png"), fullPage: true });

    // Notifier panel (the "Alerts and breaker" page): the test button reports the delivery
    // result (no session D-Bus here, so it fails and says so), and the enabled toggle is PATCHed.
    await page.locator('a[data-nav="activity"]').click();
    const channel = page.locator('[data-channel="desktop"]');
    await channel.getByRole("button", { name: "Send test alert" }).click();
    // A failed delivery is retried once, a second later: the result comes after that.
    await expect
      .poll(() => channel.locator(".chan-result").textContent(), { timeout: 10_000 })
      .toMatch(/failed/);
    expect(await channel.locator(".chan-result").getAttribute("class")).toContain("err");
    await channel.locator('input[type="checkbox"]').uncheck();
    await expect
      .poll(async () => ((await api("GET", "/api/channels")) as Json).channels[0].enabled)
      .toBe(false);
    await expect.poll(() => page.locator("#deliveries-body tr.failed").count()).toBeGreaterThan(0);

    // Persisted: a fresh load shows the new values.
    await page.locator('a[data-nav="knobs"]').click();
    await page.reload();
    await input.waitFor();
    expect(await input.inputValue()).toBe(String(shipped + 1));
    expect(await interval.inputValue()).toBe("90s");
    await page.close();
    expect(env.problems).toEqual([]);
  });
  it("a session never flagged takes a Healthy or Missed loop label; a later mark does not stretch its timeline", async () => {
    const QUIET = "ses_admin_quiet";
    const t0 = Date.now() - 2 * 3600_000;
    const beat = (at: number, turns: number) => ({
      type: "heartbeat",
      instance_id: "sg_admin_quiet",
      plugin_version: "0.1.0",
      at,
      sessions: [heartbeatSession(QUIET, { turns, turns_since_landed: turns, context_tokens: 1000 * turns })],
    });
    await api("POST", "/progress", [
      transition(QUIET, null, "build", "ok", "ok", t0, { reason: null }),
      beat(t0 + 60_000, 2),
      beat(t0 + 120_000, 4),
    ]);
    const page = await env.openPage(`#view=session&id=${QUIET}`);
    const timeline = page.locator("#session-timeline");
    await timeline.waitFor();
    const axis = () => timeline.locator(":scope > text").allTextContents();
    const before = await axis();
    expect(await page.locator("#mark-bar").textContent()).toContain("never flagged: label it for calibrate");
    expect(await page.locator("button.mark-false").textContent()).toBe("Healthy");
    expect(await page.locator("button.mark-loop").textContent()).toBe("Missed loop");

    // Two hours after its last activity: the mark lifts nothing, says so, and is drawn at the axis' end.
    await page.locator("button.mark-false").click();
    await page.locator('#mark-bar[data-mark="false_alarm"]').waitFor();
    expect(await page.locator("#mark-bar .mark-state").textContent()).toMatch(/^marked healthy by admin /);
    expect(await page.locator("#mark-bar .mark-note").textContent()).toBe(
      "never flagged: nothing to lift; kept as a healthy run for calibrate",
    );
    expect(await axis()).toEqual(before);
    expect(await timeline.locator('[data-mark="mark"]').getAttribute("d")).toMatch(/^M1096\.0 /);
    await page.screenshot({ path: artifact("admin-session-healthy-mark.png"), fullPage: true });

    await page.locator("button.mark-loop").click();
    await page.locator('#mark-bar[data-mark="confirmed_loop"]').waitFor();
    expect(await page.locator("#mark-bar .mark-state").textContent()).toMatch(
      /^marked missed loop by admin /,
    );
    expect((await api("GET", "/api/labels"))[QUIET]).toMatchObject({ label: "loop", mark: "confirmed_loop" });
    await page.locator("a.back").click();
    const mark = page.locator(`tr[data-session="${QUIET}"] td.mark`);
    await expect.poll(() => mark.getAttribute("data-mark")).toBe("confirmed_loop");
    expect(await mark.textContent()).toMatch(/^missed loopadmin \d+s ago$/);
    await page.close();
    expect(env.problems).toEqual([]);
  });
});
