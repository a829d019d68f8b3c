// The watchdog through opencode's own database, end to end: a real
// `opencode run` with no stallguard plugin loops on a scripted model (one
// read of the same file per step) and is held mid-run, so opencode keeps its
// database open in WAL mode while the watchdog reads it. No server is
// configured anywhere: no watchdog.servers, no --server, no rc-servers.json.
// Both ways the watchdog runs find the loop through the file and report it
// with source watchdog to a real router: `stallguard watchdog --once` (what
// the systemd timer runs) and the in-process loop of `serve`. While the file
// is readable no "watchdog is blind" alert reaches the channel, and doctor
// says what the last tick read.
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { run } from "../../router-ext/cli/run.ts";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { testIo } from "../helpers/cli-io.ts";
import { type Hook, startHook, webhookConfig } from "../helpers/hook.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { OPENCODE_BIN, type RunResult, runOpencode, type Workspace } from "../helpers/opencode.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { QUIET_LOCAL_YAML, startTestRouter } from "../helpers/test-router.ts";

const ADMIN = "watchdog-db-admin-token-0123456789";
const LOOP_STEPS = 24;

/** A local.yaml: the watchdog in-process every second, one json webhook channel. */
const loopYaml = (hookUrl: string) =>
  webhookConfig(hookUrl).replace(
    "watchdog:\n  enabled: false\n",
    "watchdog:\n  enabled: true\n  interval: 1s\n  local_llm_enabled: false\n",
  );

describe("watchdog on opencode.db, no server configured", () => {
  let tmp: string;
  let model: ModelServer;
  let ws: Workspace | null = null;
  let session: string | undefined;
  let running: Promise<RunResult>;
  let release: () => void = () => undefined;
  const held = new Promise<void>((r) => {
    release = r;
  });
  const routers: RunningServer[] = [];
  let hook: Hook<{ title: string; state: string; source: string; dedup_key: string }>;

  const api = async (srv: RunningServer, path: string) =>
    (await (
      await fetch(`${srv.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as Record<
      string,
      // biome-ignore lint/suspicious/noExplicitAny: API JSON
      any
    >;
  const sessionRow = async (srv: RunningServer) =>
    ((await api(srv, "/api/sessions")).sessions as Array<Record<string, unknown>>).find(
      (s) => s.session_id === session,
    );
  /** The opencode home's paths: where `opencode db path` puts the file for this run. */
  const ocEnv = () => {
    if (!ws) throw new Error("opencode has not started");
    return { HOME: ws.home, XDG_DATA_HOME: join(ws.home, ".local", "share") };
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-db-e2e-"));
    hook = await startHook();
    model = await startModelServer({
      script: async (req) => {
        session ??= req.sessionId;
        if (req.step < LOOP_STEPS) {
          const filePath = join(ws?.projectDir ?? "", "notes.md");
          return { kind: "tools", calls: [{ name: "read", args: { filePath } }] };
        }
        await held; // opencode waits on the model mid-run; its database stays open
        return { kind: "text", text: "still looking" };
      },
    });
    running = runOpencode({
      modelUrl: model.url,
      message: "find the bug in notes.md",
      projectFiles: { "notes.md": "# notes\nline two\n" },
      beforeStart: (w) => {
        ws = w;
      },
      timeoutMs: 200_000,
    });
    // Until opencode asks for the step the model holds back (expect.poll works only inside a test).
    const deadline = Date.now() + 120_000;
    while (!model.requests.some((r) => !r.isTitle && r.step >= LOOP_STEPS)) {
      if (Date.now() > deadline) throw new Error(`opencode never reached step ${LOOP_STEPS}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    release();
    const r = await running?.catch(() => null);
    r?.cleanup();
    for (const srv of routers) await srv.close();
    await model?.close();
    await hook?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("the run is mid-loop, its opencode.db is where opencode keeps it, and no server is named anywhere", () => {
    expect(session).toMatch(/^ses_/);
    const home = ocEnv().HOME;
    expect(existsSync(join(home, ".local", "share", "opencode", "opencode.db"))).toBe(true);
    expect(existsSync(join(home, ".local", "share", "opencode", "rc-servers.json"))).toBe(false);
  });

  test("`stallguard watchdog --once` (the timer's path) flags it through the file, source watchdog", async () => {
    const dir = join(tmp, "timer");
    mkdirSync(dir, { recursive: true });
    const srv = await startTestRouter(dir, QUIET_LOCAL_YAML, {
      env: routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN }),
    });
    routers.push(srv);
    const local = join(dir, "watchdog.yaml");
    writeFileSync(local, "watchdog:\n  local_llm_enabled: false\nnotifications:\n  channels: []\n");
    const t = testIo(join(dir, "home"), { ...ocEnv(), STALLGUARD_TOKEN: srv.pluginToken });
    const code = await run(["watchdog", "--once", "--router", srv.url, "--config", local], t.io);
    expect(code, t.err()).toBe(0);
    expect(t.out()).toMatch(/^watchdog: servers=0 sessions=1 flagged=1 transitions=1 router=ok db=read$/m);
    expect(t.err()).not.toContain("blind");
    expect(await sessionRow(srv)).toMatchObject({ source: "watchdog", verdict: "looping" });
    expect((await api(srv, "/health")).watchdog).toMatchObject({ blind: false, db: "read", servers: 0 });
    // doctor reads the tick: what it read, never "no opencode running" while opencode runs.
    const d = testIo(join(dir, "home"), ocEnv());
    await run(["doctor", "--json", "--router", srv.url, "--opencode", OPENCODE_BIN], d.io);
    const checks = (JSON.parse(d.out()) as { checks: Array<{ id: string; status: string; detail: string }> })
      .checks;
    expect(checks.find((c) => c.id === "watchdog")).toMatchObject({
      status: "pass",
      detail: expect.stringMatching(/^last tick \d+s ago, read opencode\.db: 1 session\(s\) judged$/),
    });
  });

  test("serve's in-process watchdog flags it through the file; no blind alert while the file is readable", async () => {
    const dir = join(tmp, "serve");
    mkdirSync(dir, { recursive: true });
    const said: string[] = [];
    const srv = await startTestRouter(dir, loopYaml(hook.url), {
      env: {
        ...routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN }),
        ...ocEnv(),
        XDG_CONFIG_HOME: join(dir, "config"),
        XDG_STATE_HOME: join(dir, "state"),
      },
      watchdog: true,
      log: (line: string) => said.push(line),
    });
    routers.push(srv);
    // The first in-process tick runs 5 s after start, then every second.
    await expect
      .poll(async () => (await sessionRow(srv))?.verdict, { timeout: 60_000, interval: 250 })
      .toBe("looping");
    expect(await sessionRow(srv)).toMatchObject({ source: "watchdog" });
    await expect
      .poll(() => hook.bodies.filter((b) => b.dedup_key === session).length, { timeout: 10_000 })
      .toBe(1);
    expect(hook.bodies.find((b) => b.dedup_key === session)).toMatchObject({
      state: "trigger",
      source: "watchdog",
    });
    // A few more ticks while opencode still holds the file open: never blind.
    const first = (await api(srv, "/health")).watchdog.last_tick_at as number;
    await expect
      .poll(async () => (await api(srv, "/health")).watchdog.last_tick_at, { timeout: 15_000, interval: 250 })
      .toBeGreaterThan(first + 1500);
    expect((await api(srv, "/health")).watchdog).toMatchObject({ blind: false, db: "read", servers: 0 });
    expect(hook.bodies.filter((b) => /blind/.test(b.title))).toEqual([]);
    // Those ticks ran on the watchdog's own thread (tick-thread.ts), none failed.
    expect(said).toContain("watchdog: ticking in-process every 1s, on its own thread");
    expect(said.filter((l) => /its thread did not start|tick failed/.test(l))).toEqual([]);
  });

  test("the run then finishes normally: reading its database never got in its way", async () => {
    release();
    const r = await running;
    expect(r.timedOut).toBe(false);
    expect(r.code, r.stderr.slice(-2000)).toBe(0);
  });
});
