// The operator's view end to end: a session flagged by the real plugin in real
// opencode, through the real gate and router (real SQLite), seen in real
// headless Chromium. auto_recover with max_recoveries 0 hard-stops the tree on
// the first looping detection (the plugin shows the stage-3 toast in
// opencode); the readout links the session to its page (timeline, evidence,
// report, actions); False alarm is kept with who and when, shown in the
// readout, counted on /metrics, and the gate lets the tree through again: the
// same opencode session runs its next turn. Screenshots of the readout and
// the session page are written to test-artifacts/ on every run. A second
// session in warn mode keeps reading after its transitions: the page shows
// the heartbeat's current figures (x30, not the count at the transition), its
// last landed change, title and folder; when opencode exits, its tree and
// plugin show as ended.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { artifact, type Json, launchChromium } from "../helpers/admin-browser.ts";
import { type ModelReply, scriptRouter, steps } from "../helpers/model-server.ts";
import type { EventStream } from "../helpers/opencode.ts";
import { type PluginStack, startPluginStack } from "../helpers/plugin-stack.ts";

const ADMIN = "admin-session-e2e-admin-token";
const TOKEN = "admin-session-e2e-plugin-token";

describe("a flagged session's page and False alarm (real opencode, real Chromium)", () => {
  const router = scriptRouter();
  let stack: PluginStack;
  let events: EventStream;
  let context: BrowserContext;
  const problems: string[] = [];

  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  const api = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(`${stack.srv.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" },
      body: body === undefined ? null : JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBe(200);
    return res.json();
  };
  const openPage = async (fragment: string): Promise<Page> => {
    const page = await context.newPage();
    page.setDefaultTimeout(20_000);
    page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
    page.on("console", (m) => {
      if (/Content Security Policy|Trusted Type/i.test(m.text())) problems.push(`csp: ${m.text()}`);
    });
    await page.goto(`${stack.srv.url}/admin${fragment}`);
    return page;
  };

  beforeAll(async () => {
    stack = await startPluginStack({
      tmpPrefix: "sg-admin-session-",
      localYaml: [
        "watchdog:\n  enabled: false",
        "notifications:\n  channels: []",
        // A 2 s heartbeat period: a tree is ended 6 s after its opencode exits (the plugin beats every 1 s).
        "progress:\n  mode: auto_recover\n  max_recoveries: 0\n  heartbeat: 2s",
        "prices:\n  loop: { prompt: 3, completion: 15 }",
        "",
      ].join("\n"),
      script: router.script,
      usage: { prompt_tokens: 20_000, completion_tokens: 200 },
      adminToken: ADMIN,
      pluginToken: TOKEN,
    });
    events = stack.oc.events();
    await events.ready;
    context = await launchChromium(join(stack.dir, "chromium-profile"), { width: 1400, height: 900 });
  }, 120_000);

  afterAll(async () => {
    await context?.close();
    events?.stop();
    await stack?.close();
  });

  test("open the flagged session, see why, mark it a false alarm, and the tree runs again", async () => {
    const { oc } = stack;
    const s = await oc.createSession({ title: "re-reader" });
    let released = false;
    // The loop waits a moment before each read: the target names the read, not the sleep.
    router.on(
      s.id,
      (): ModelReply =>
        released
          ? { kind: "text", text: "running again after the false alarm" }
          : { kind: "tools", calls: [{ name: "bash", args: { command: "sleep 0.1 && cat README.md" } }] },
    );
    await oc.promptAsync(s.id, "read the readme");

    // The plugin flags it; at looping the hard stop refuses the tree, opencode's next request gets 403.
    await expect
      .poll(
        async () =>
          ((await api("GET", "/api/sessions")).sessions as Json[]).find((r) => r.session_id === s.id),
        { timeout: 90_000, interval: 300 },
      )
      .toMatchObject({ verdict: "looping", refused: true, stage: "stopped" });
    await oc.waitIdle(s.id, 60_000);
    // The stage-3 toast is shown in opencode (issue 14's fix, checked here).
    await events.waitFor(
      (e) => e.type === "tui.toast.show" && e.properties?.title === "stallguard: tree stopped",
      15_000,
    );

    const page = await openPage(`#token=${ADMIN}`);
    const row = page.locator(`tr[data-session="${s.id}"]`);
    await row.waitFor();
    expect(await row.getAttribute("data-verdict")).toBe("looping");
    expect(await row.locator("td.mark").textContent()).toBe("-");
    expect(await row.locator("td.target").textContent()).toMatch(/^bash cat README\.md x\d+$/);
    await page.screenshot({ path: artifact("admin-readout-flagged.png") });

    // The session page: timeline, evidence, report, the mode's actions.
    await row.locator("a.session-link").click();
    const timeline = page.locator("#session-timeline");
    await timeline.waitFor();
    expect(await page.locator("#session-id").textContent()).toBe(s.id);
    // What opencode shows the user about it: the title and the folder, from the plugin's heartbeat.
    expect(await page.locator('[data-about="title"]').textContent()).toBe("re-reader");
    expect(await page.locator('[data-about="folder"]').textContent()).toBe(oc.projectDir);
    expect(await page.locator('[data-about="started"]').textContent()).toMatch(/^started \d{4}-\d\d-\d\d /);
    const bands = await timeline.locator("rect title").allTextContents();
    expect(bands.map((t) => t.split(" ")[0])).toEqual(["ok", "stalling", "looping"]);
    expect(await timeline.locator("path > title").allTextContents()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^tree refused by stallguard \(max_recoveries \(0\)/),
        expect.stringMatching(/^first flag \d\d:\d\d:\d\d: stalling/),
      ]),
    );
    expect(await timeline.locator('[data-series="turns since landed"]').count()).toBe(1);
    expect(await timeline.locator('[data-series="$ since landed"] text').textContent()).toMatch(
      /^\$ since landed \(max \$\d+\.\d\d\)$/,
    );
    const evidence = page.locator("table.evidence");
    expect(await evidence.locator('[data-evidence="signal"] td').first().textContent()).toMatch(/^[a-z_]+: /);
    expect(await evidence.locator("tr.fired").count()).toBe(1);
    expect(await evidence.locator('[data-evidence="top_targets"] td').first().textContent()).toMatch(
      /^bash cat README\.md x\d+$/,
    );
    expect(await evidence.locator('[data-evidence="same_result"] td').nth(1).textContent()).toBe(
      `warn at ${configSchema.parse({}).thresholds.top_warn}, loop at ${configSchema.parse({}).thresholds.top_loop}`,
    );
    expect(await evidence.locator('[data-evidence="context"] td').first().textContent()).toMatch(/ tokens$/);
    expect(await page.locator("#session-report").textContent()).toContain(s.id);
    expect(await page.locator('table.actions [data-action-what="tree refused"]').count()).toBe(1);
    await page.screenshot({ path: artifact("admin-session-page.png"), fullPage: true });

    // False alarm: kept with who and when, the tree's refusal lifted.
    await page.locator("button.mark-false").click();
    await page.locator('#mark-bar[data-mark="false_alarm"]').waitFor();
    expect(await page.locator("#mark-bar .mark-state").textContent()).toMatch(
      /^marked false alarm by admin /,
    );
    expect(await page.locator('[data-fact="gate"]').textContent()).toBe("lets it through");
    await page.screenshot({ path: artifact("admin-session-false-alarm.png"), fullPage: true });

    await page.locator("a.back").click();
    const mark = page.locator(`tr[data-session="${s.id}"] td.mark`);
    await expect.poll(() => mark.getAttribute("data-mark")).toBe("false_alarm");
    expect(await mark.textContent()).toMatch(/^false alarmadmin \d+s ago$/);
    expect(await page.locator("#marks-line").textContent()).toContain("1 healthy (false alarm)");
    await page.screenshot({ path: artifact("admin-readout-false-alarm.png") });

    // Export labels: the browser saves the labels file calibrate reads.
    const download = page.waitForEvent("download");
    await page.locator("#export-labels").click();
    const file = await (await download).path();
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      [s.id]: expect.objectContaining({ label: "healthy", mark: "false_alarm", by: "admin" }),
    });

    const rows = (await api("GET", "/api/sessions")).sessions as Json[];
    expect(rows.find((r) => r.session_id === s.id)).toMatchObject({
      refused: false,
      mark: { kind: "false_alarm", by: "admin", verdict: "looping" },
    });
    const metrics = await (await fetch(`${stack.srv.url}/metrics`)).text();
    expect(metrics).toMatch(/^stallguard_marks_total\{kind="false_alarm"\} 1$/m);

    // The gate lets the tree through: the same opencode session runs its next turn.
    released = true;
    await oc.prompt(s.id, "go on", { timeoutMs: 60_000 });
    const msgs = await oc.messages(s.id);
    const last = msgs.filter((m) => m.info.role === "assistant").at(-1);
    expect(last?.parts.find((p: Json) => p.type === "text")?.text).toBe(
      "running again after the false alarm",
    );
    await page.close();
    expect(problems).toEqual([]);
  }, 240_000);
  test("the readout keeps up after a transition, and a tree shows ended when its opencode exits", async () => {
    const { oc } = stack;
    await api("PUT", "/api/knobs", { path: "progress.mode", value: "warn" });
    const s = await oc.createSession({ title: "steady reader" });
    const readme = join(oc.projectDir, "README.md");
    const read: ModelReply = { kind: "tools", calls: [{ name: "read", args: { filePath: readme } }] };
    // One file written (a landed change), then the same read 30 times: flagged on the way, never stopped.
    router.on(
      s.id,
      steps(
        {
          kind: "tools",
          calls: [{ name: "write", args: { filePath: join(oc.projectDir, "notes.md"), content: "n\n" } }],
        },
        ...Array.from({ length: 30 }, () => read),
        { kind: "text", text: "done" },
      ),
    );
    await oc.prompt(s.id, "write notes, then keep reading the readme", { timeoutMs: 120_000 });
    const row = async (): Promise<Json> =>
      ((await api("GET", "/api/sessions")).sessions as Json[]).find((r) => r.session_id === s.id);
    // The heartbeat after the last call brings the figures up to date.
    await expect.poll(row, { timeout: 20_000, interval: 300 }).toMatchObject({
      verdict: "looping",
      top_target: "read README.md",
      top_target_count: 30,
      calls: 31,
      title: "steady reader",
      directory: oc.projectDir,
    });
    const detail = await api("GET", `/api/sessions/${s.id}`);
    const atFlag = (detail.transitions as Json[]).at(-1);
    expect(atFlag.top_target_count).toBeLessThan(30);
    expect((await row()).last_landed_at).toBeGreaterThan(0);

    const page = await openPage(`#token=${ADMIN}`);
    const line = page.locator(`tr[data-session="${s.id}"]`);
    await line.waitFor();
    expect(await line.locator("td.target").textContent()).toBe("read README.md x30");
    expect(await line.locator('[data-field="calls"]').textContent()).toBe("31");
    expect(await line.locator("[data-title]").textContent()).toBe("steady reader");
    await line.locator("a.session-link").click();
    await page.locator("#session-timeline").waitFor();
    expect(await page.locator('[data-fact="top target"]').textContent()).toBe("read README.md x30");
    expect(await page.locator('[data-fact="calls"]').textContent()).toBe("31");
    expect(await page.locator('[data-fact="last landed"]').textContent()).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
    );
    expect(await page.locator('[data-about="title"]').textContent()).toBe("steady reader");
    expect(await page.locator('[data-about="folder"]').textContent()).toBe(oc.projectDir);
    // The evidence is the transition's: the count when it was flagged.
    expect(await page.locator('table.evidence [data-evidence="top_targets"] td').first().textContent()).toBe(
      `read README.md x${atFlag.top_target_count}`,
    );
    expect(await page.locator("#session-facts [data-state]").getAttribute("data-state")).toBe("running");
    await page.screenshot({ path: artifact("admin-session-current.png"), fullPage: true });

    // opencode exits: nothing is heard of its sessions, and after three heartbeat periods they are ended.
    await oc.stop();
    await expect.poll(async () => (await row()).ended, { timeout: 30_000, interval: 500 }).toBe(true);
    await page.locator('#session-facts [data-state="ended"]').waitFor({ timeout: 15_000 });
    expect(await page.locator('[data-fact="plugin"]').textContent()).toMatch(/^ended /);
    await page.screenshot({ path: artifact("admin-session-ended.png"), fullPage: true });
    await page.locator("a.back").click();
    const tree = page.locator(`tbody[data-root="${s.id}"]`);
    await tree.locator('[data-state="ended"]').waitFor();
    expect(await tree.locator("[data-state]").textContent()).toMatch(/^ended \(last heard \d+s ago\)$/);
    expect(await tree.locator(`tr[data-session="${s.id}"] [data-plugin]`).getAttribute("data-plugin")).toBe(
      "ended",
    );
    expect(await tree.locator(".tree-about").textContent()).toContain(oc.projectDir);
    await page.screenshot({ path: artifact("admin-readout-ended.png") });
    await page.close();
    expect(problems).toEqual([]);
  }, 240_000);
});
