// The first night for real (issue 25, finding 1), from a fresh HOME: the
// built `stallguard serve` on a non-default port set in its config file, the
// plugin installed with `stallguard install-plugin`, real opencode with its
// provider on the gate and no STALLGUARD_URL anywhere. The plugin finds the
// router through the router.json serve wrote, so a loop is flagged; a plugin
// that reports elsewhere makes doctor fail naming its URL; with the router
// stopped opencode's plugin warns once (a toast on opencode's event stream
// and a line in its log) and keeps its reports until the router is back.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort } from "../helpers/free-port.ts";
import {
  type ModelReply,
  type ModelServer,
  scriptRouter,
  startModelServer,
  steps,
} from "../helpers/model-server.ts";
import {
  type EventStream,
  OPENCODE_BIN,
  type OpencodeServer,
  REPO,
  runOpencode,
  seedConfigDir,
  startOpencode,
} from "../helpers/opencode.ts";

const CLI = join(REPO, "dist", "stallguard.mjs");
const UNDELIVERED = "stallguard: reports do not reach the router";

// biome-ignore lint/suspicious/noExplicitAny: raw API JSON
type Json = any;

describe("the plugin finds its router without configuration (real opencode, fresh HOME)", () => {
  const router = scriptRouter();
  let tmp: string, home: string, config: string, routerUrl: string;
  let model: ModelServer, oc: OpencodeServer, events: EventStream;
  let serve: { proc: ChildProcess; out: () => string } | undefined;

  /** The env every stallguard command and opencode get: the fresh HOME, nothing else of ours. */
  const userEnv = () => ({ PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: home });
  const cli = (args: string[]) => {
    const r = spawnSync("node", [CLI, ...args], {
      env: userEnv(),
      encoding: "utf8",
      cwd: tmp,
      timeout: 120_000,
    });
    return { code: r.status, out: `${r.stdout}${r.stderr}`, stdout: r.stdout };
  };
  const secret = (name: string) => readFileSync(join(home, ".config", "stallguard", name), "utf8").trim();
  const api = async (path: string): Promise<Json> => {
    const res = await fetch(`${routerUrl}${path}`, {
      headers: { authorization: `Bearer ${secret("admin.token")}` },
    });
    expect(res.status, path).toBe(200);
    return res.json();
  };

  async function startServe(): Promise<void> {
    const proc = spawn("node", [CLI, "serve", "--config", config], { env: userEnv(), cwd: tmp });
    let out = "";
    proc.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    proc.stderr?.on("data", (b: Buffer) => {
      out += b.toString();
    });
    serve = { proc, out: () => out };
    // Waited for by hand: expect.poll belongs to tests, and this also runs in beforeAll.
    const deadline = Date.now() + 60_000;
    while (!/listening on http:/.test(out)) {
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`serve did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(/listening on (http:\S+)/.exec(out)?.[1]).toBe(routerUrl);
  }
  async function stopServe(): Promise<void> {
    const proc = serve?.proc;
    if (!proc || proc.exitCode !== null) return;
    const gone = new Promise((r) => proc.once("exit", r));
    proc.kill("SIGTERM");
    await gone;
  }
  const toasts = () =>
    events.events.filter((e) => e.type === "tui.toast.show" && e.properties?.title === UNDELIVERED);
  const undeliveredLogs = () =>
    oc.output().match(/progress_undelivered: cannot deliver reports to \S+/g) ?? [];

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "sg-link-oc-"));
    home = join(tmp, "home");
    mkdirSync(home);
    model = await startModelServer({
      script: router.script,
      usage: { prompt_tokens: 2000, completion_tokens: 20 },
    });
    // Not 4870: the port lives in the router's config file only.
    let port = await freePort();
    if (port === 4870) port = await freePort();
    routerUrl = `http://127.0.0.1:${port}`;
    config = join(tmp, "config.local.yaml");
    writeFileSync(
      config,
      `server:\n  port: ${port}\n  upstream: ${model.url}\nwatchdog:\n  enabled: false\nnotifications:\n  channels: []\n`,
    );
    await startServe();
    seedConfigDir(join(home, ".config", "opencode"));
    const install = cli(["install-plugin"]);
    expect(install.code, install.out).toBe(0);
    oc = await startOpencode({
      modelUrl: `${routerUrl}/v1`,
      apiKey: "{file:~/.config/stallguard/client.key}",
      // The fresh HOME (its plugin folder and stallguard's files) and a quick heartbeat; no STALLGUARD_URL.
      env: { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), STALLGUARD_HEARTBEAT_MS: "1000" },
      projectFiles: { "README.md": "# scratch\n" },
    });
    events = oc.events();
    await events.ready;
  }, 240_000);
  afterAll(async () => {
    events?.stop();
    await oc?.stop();
    await stopServe();
    await model?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("serve wrote router.json with its non-default port; a loop is flagged with no STALLGUARD_URL", async () => {
    expect(oc.env.STALLGUARD_URL).toBeUndefined();
    const link = JSON.parse(secret("router.json"));
    expect(link).toMatchObject({
      url: routerUrl,
      token: { file: join(home, ".config", "stallguard", "plugin.token") },
    });
    const s = await oc.createSession();
    const read: ModelReply = {
      kind: "tools",
      calls: [{ name: "read", args: { filePath: join(oc.projectDir, "README.md") } }],
    };
    router.on(s.id, steps(...Array.from({ length: 26 }, () => read), { kind: "text", text: "done" }));
    await oc.prompt(s.id, "read the readme", { timeoutMs: 180_000 });
    await expect
      .poll(
        async () => (await api("/api/sessions")).sessions.find((x: Json) => x.session_id === s.id)?.verdict,
        {
          timeout: 30_000,
        },
      )
      .toBe("looping");
    const row = (await api("/api/sessions")).sessions.find((x: Json) => x.session_id === s.id);
    expect(row).toMatchObject({ source: "plugin", plugin_live: true, plugin_headers: true });
    const health = await (await fetch(`${routerUrl}/health`)).json();
    expect(health.plugins_headers_only).toEqual([]);
    // doctor from the same HOME agrees: the plugin reports here.
    const d = cli(["doctor", "--project", oc.projectDir, "--opencode", OPENCODE_BIN, "--config", config]);
    expect(d.out).toMatch(/ok +reporting +\d+ plugin\(s\) report; no plugin sends headers without reporting/);
    expect(d.out).toContain(`router ${routerUrl}`);
  });

  test("doctor fails when a plugin sends headers through the gate but cannot report, naming its URL", async () => {
    const dead = `http://127.0.0.1:${await freePort()}`;
    const run = await runOpencode({
      modelUrl: `${routerUrl}/v1`,
      apiKey: "{file:~/.config/stallguard/client.key}",
      message: "read the readme",
      // This one opencode was told to report elsewhere (the finding's plugin on 4870).
      env: { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), STALLGUARD_URL: dead },
      projectFiles: { "README.md": "# scratch\n" },
      timeoutMs: 120_000,
    });
    try {
      expect(run.code, run.stderr).toBe(0);
    } finally {
      run.cleanup();
    }
    const d = cli(["doctor", "--project", oc.projectDir, "--opencode", OPENCODE_BIN, "--config", config]);
    expect(d.code, d.out).toBe(1);
    expect(d.out).toMatch(
      new RegExp(
        `FAIL +reporting +1 plugin\\(s\\) send headers through the gate but do not report: they report to ${dead} \\(its deliveries fail\\), this router is ${routerUrl}`,
      ),
    );
    expect(d.out).toContain(`fix: unset STALLGUARD_URL and plugin.router_url where opencode runs`);
  });

  test("with the router stopped the plugin warns once (toast and log, naming the URL), and delivers when it is back", async () => {
    expect(toasts()).toEqual([]);
    await stopServe();
    await expect.poll(() => toasts().length, { timeout: 60_000, interval: 250 }).toBe(1);
    const toast = toasts()[0];
    // Bun's fetch (opencode's runtime) names a refused connection ConnectionRefused.
    expect(toast?.properties.message).toMatch(
      new RegExp(
        `^${routerUrl}/progress: no answer: ConnectionRefused; \\d+ report\\(s\\) kept and sent when it answers`,
      ),
    );
    expect(toast?.properties.variant).toBe("warning");
    await expect.poll(() => undeliveredLogs().length, { timeout: 10_000 }).toBe(1);
    expect(undeliveredLogs()[0]).toBe(
      `progress_undelivered: cannot deliver reports to ${routerUrl}/progress`,
    );
    expect(oc.output()).toContain("the URL is from");
    expect(oc.output()).toContain("router.json (written by stallguard serve)");
    // Heartbeats keep failing for a while more: still one warning.
    await new Promise((r) => setTimeout(r, 12_000));
    expect(toasts()).toHaveLength(1);
    expect(undeliveredLogs()).toHaveLength(1);
    // Back on the same port: the kept heartbeat arrives, and the outage is on record.
    await startServe();
    await expect
      .poll(async () => (await (await fetch(`${routerUrl}/health`)).json()).plugins_live, { timeout: 30_000 })
      .toBeGreaterThan(0);
    const down = (await api("/api/events")).router_events;
    expect(down[0]).toMatchObject({ kind: "down", clean: true });
  });
});
