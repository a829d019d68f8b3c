// The watchdog against the real opencode binary with no stallguard plugin:
// one tick flags a looping session and reports it to a stand-in router (a
// real HTTP server validating every body with the wire schema), a second tick
// reports nothing new, a recovery is one transition back to ok, a healthy
// session is never reported and costs no model call, and a dead router raises
// one critical desktop alert through notify-send on a real session bus.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { runWatchdogTick } from "../../router-ext/watchdog/index.ts";
import {
  type Config,
  type ProgressMessage,
  parseConfig,
  parseProgressBody,
  policyFromConfig,
  replay,
  type Transition,
  watchdogReadOnlyAgents,
} from "../../shared/index.ts";
import { desktopToolsMissing, startSessionBus } from "../helpers/dbus.ts";
import { freePort } from "../helpers/free-port.ts";
import { type Hook, startHook, webhookConfig } from "../helpers/hook.ts";
import { type ModelServer, scriptRouter, startModelServer, steps } from "../helpers/model-server.ts";
import { type OpencodeServer, startOpencode } from "../helpers/opencode.ts";
import { routerEnv } from "../helpers/router-env.ts";

const TOKEN = "watchdog-e2e-token";

interface Receiver {
  url: string;
  bodies: ProgressMessage[][];
  invalid: string[][];
  auth: string[];
  close(): Promise<void>;
}

/** Stands in for the router: POST /progress, every body checked with parseProgressBody. */
async function startReceiver(): Promise<Receiver> {
  const bodies: ProgressMessage[][] = [];
  const invalid: string[][] = [];
  const auth: string[] = [];
  const srv: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => {
      raw += c.toString("utf8");
    });
    req.on("end", () => {
      if (req.method !== "POST" || req.url !== "/progress") {
        res.writeHead(404).end();
        return;
      }
      auth.push(String(req.headers.authorization ?? ""));
      let json: unknown;
      try {
        json = JSON.parse(raw);
      } catch {
        invalid.push(["not JSON"]);
        res.writeHead(400).end();
        return;
      }
      const r = parseProgressBody(json);
      if (!r.ok) {
        invalid.push(r.errors);
        res.writeHead(400, { "content-type": "application/json" }).end(JSON.stringify({ error: "invalid" }));
        return;
      }
      bodies.push(r.value);
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ accepted: r.value.length, duplicates: 0 }));
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    bodies,
    invalid,
    auth,
    close: () => new Promise((resolve) => srv.close(() => resolve())),
  };
}

/** An Ollama-compatible /api/chat that counts its calls and always says yes. */
async function startFakeOllama(): Promise<{ url: string; calls: string[]; close(): Promise<void> }> {
  const calls: string[] = [];
  const srv = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => {
      raw += c.toString("utf8");
    });
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/api/chat") {
        const body = JSON.parse(raw) as { messages: Array<{ content: string }> };
        calls.push(body.messages.map((m) => m.content).join("\n"));
        res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({
            model: "fake",
            message: { role: "assistant", content: "yes: it reads the same file over and over" },
            done: true,
          }),
        );
        return;
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve) => srv.listen(0, "127.0.0.1", resolve));
  const port = (srv.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise((resolve) => srv.close(() => resolve())),
  };
}

async function until(pred: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function transitionsOf(bodies: ProgressMessage[][]): Transition[] {
  return bodies.flat().filter((m): m is Transition => m.type === "transition");
}

describe("watchdog tick against real opencode (no plugin)", () => {
  const router = scriptRouter();
  let model: ModelServer;
  let oc: OpencodeServer;
  let receiver: Receiver;
  let ollama: Awaited<ReturnType<typeof startFakeOllama>>;
  let tmp: string;
  let config: Config;
  let env: NodeJS.ProcessEnv;
  let statePath: string;
  let loopId: string;
  let hook: Hook;
  let srv: RunningServer;
  let noModel: Config;
  const ADMIN = "watchdog-e2e-admin";
  const realState = () => join(tmp, "real", "watchdog.json");
  const admin = async (path: string) =>
    (await (
      await fetch(`${srv.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as Record<
      string,
      // biome-ignore lint/suspicious/noExplicitAny: API JSON
      any
    >;
  const hookFor = (id: string) => hook.bodies.filter((b) => b.dedup_key === id);
  const logs: string[] = [];
  const log = (line: string) => {
    logs.push(line);
  };

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-e2e-"));
    model = await startModelServer({
      script: router.script,
      usage: { prompt_tokens: 2000, completion_tokens: 20 },
    });
    oc = await startOpencode({
      modelUrl: model.url,
      projectFiles: { "notes.md": "# notes\nline two\n", "src/app.js": "export const x = 1;\n" },
      git: true,
    });
    receiver = await startReceiver();
    ollama = await startFakeOllama();
    const parsed = parseConfig([
      {
        source: "test",
        value: {
          local_compute: { enabled: true },
          verification: { base_url: ollama.url, model: "fake-judge:1b" },
          watchdog: { timeout: "10s", lookback: "30m" },
        },
      },
    ]);
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
    config = parsed.config;
    // The registry file the session-registry plugin would write; the watchdog finds opencode through it.
    const dataHome = join(tmp, "data");
    mkdirSync(join(dataHome, "opencode"), { recursive: true });
    writeFileSync(
      join(dataHome, "opencode", "rc-servers.json"),
      JSON.stringify([{ serverUrl: oc.url, pid: 1, directory: oc.projectDir }]),
    );
    env = { ...process.env, XDG_DATA_HOME: dataHome, STALLGUARD_TOKEN: TOKEN };
    statePath = join(tmp, "state", "watchdog.json");
    const plain = parseConfig([{ source: "test", value: { watchdog: { timeout: "10s", lookback: "30m" } } }]);
    if (!plain.ok) throw new Error(JSON.stringify(plain.issues));
    noModel = plain.config;
    // The real router extension, with a webhook channel standing in for the operator's pager.
    hook = await startHook();
    const local = join(tmp, "router.yaml");
    writeFileSync(local, webhookConfig(hook.url));
    srv = await startServer({
      port: 0,
      dbPath: join(tmp, "router", "stallguard.db"),
      configPath: local,
      env: routerEnv(tmp, { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_TOKEN: TOKEN }),
      log: () => undefined,
    });
  });

  afterAll(async () => {
    await oc?.stop();
    await model?.close();
    await receiver?.close();
    await ollama?.close();
    await srv?.close();
    await hook?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const tick = (over: Partial<Parameters<typeof runWatchdogTick>[0]> = {}) =>
    runWatchdogTick({ config, routerUrl: receiver.url, statePath, env, log, ...over });

  test("one tick flags the looping session, and only that one", async () => {
    const notes = join(oc.projectDir, "notes.md");
    const loop = await oc.createSession({ title: "loop" });
    loopId = loop.id;
    // The same read, every step, 26 times: nothing ever lands.
    router.on(
      loop.id,
      steps(
        ...Array.from({ length: 26 }, () => ({
          kind: "tools" as const,
          calls: [{ name: "read", args: { filePath: notes } }],
        })),
        { kind: "text", text: "still looking" },
      ),
    );
    const healthy = await oc.createSession({ title: "healthy" });
    const app = join(oc.projectDir, "src", "app.js");
    router.on(
      healthy.id,
      steps(
        { kind: "tools", calls: [{ name: "read", args: { filePath: app } }] },
        {
          kind: "tools",
          calls: [{ name: "edit", args: { filePath: app, oldString: "x = 1", newString: "x = 2" } }],
        },
        {
          kind: "tools",
          calls: [{ name: "bash", args: { command: "git commit -am wip -q", description: "c" } }],
        },
        { kind: "text", text: "done" },
      ),
    );
    await oc.prompt(loop.id, "find the bug");
    await oc.prompt(healthy.id, "change x");

    const t0 = Date.now();
    const r = await tick();
    console.log(`[timing] watchdog tick, ${r.sessions} sessions, 1 model call: ${Date.now() - t0} ms`);
    expect(receiver.invalid).toEqual([]);
    expect(r.blind).toBe(false);
    expect(r.servers).toBe(1);
    expect(r.sessions).toBeGreaterThanOrEqual(2);
    expect(r.router).toBe("ok");
    expect(r.transitions.map((t) => [t.session_id, t.source, t.previous, t.verdict])).toEqual([
      [loop.id, "watchdog", "ok", "looping"],
    ]);

    // The verdict is the core's: the same messages replayed offline end the same way.
    const policy = policyFromConfig(config, watchdogReadOnlyAgents(config));
    const offline = replay([{ id: loop.id, parentId: null, messages: await oc.messages(loop.id) }], policy);
    expect(offline[0]?.verdict).toBe("looping");

    // What reached the router: one body, the transition plus the tick record, with the token.
    expect(receiver.bodies).toHaveLength(1);
    const sent = transitionsOf(receiver.bodies);
    expect(sent).toHaveLength(1);
    const t = sent[0] as Transition;
    expect(t.session_id).toBe(loop.id);
    expect(t.root_id).toBe(loop.id);
    expect(t.top_target).toContain("notes.md");
    expect(t.report).toContain(loop.id);
    expect(t.second_opinion).toEqual({
      model: "fake-judge:1b",
      stuck: true,
      reason: "it reads the same file over and over",
    });
    const tickMsg = receiver.bodies[0]?.find((m) => m.type === "watchdog_tick");
    expect(tickMsg).toMatchObject({ type: "watchdog_tick", servers: 1, blind: false, flagged: 1 });
    expect(receiver.auth).toEqual([`Bearer ${TOKEN}`]);
    expect(transitionsOf(receiver.bodies).some((x) => x.session_id === healthy.id)).toBe(false);

    // One model call, for the flagged session only, on a digest without content.
    expect(ollama.calls).toHaveLength(1);
    expect(ollama.calls[0]).toContain("read");
    expect(ollama.calls[0]).toContain("notes.md");
    expect(ollama.calls[0]).not.toContain("line two");
  });

  test("a second tick with no change reports nothing new and asks no model", async () => {
    const before = receiver.bodies.length;
    const r = await tick();
    expect(r.transitions).toEqual([]);
    expect(r.modelCalls).toBe(0);
    expect(receiver.bodies.length).toBe(before + 1);
    expect(receiver.bodies.at(-1)?.map((m) => m.type)).toEqual(["watchdog_tick"]);
    expect(ollama.calls).toHaveLength(1);
  });

  test("the real router extension lists it with source watchdog; the channel gets one trigger, once", async () => {
    const r = await tick({ config: noModel, routerUrl: srv.url, statePath: realState() });
    expect(r.router).toBe("ok");
    expect(r.transitions.map((t) => [t.session_id, t.verdict])).toEqual([[loopId, "looping"]]);
    const rows = (await admin("/api/sessions")).sessions as Array<Record<string, unknown>>;
    expect(rows.find((x) => x.session_id === loopId)).toMatchObject({
      source: "watchdog",
      verdict: "looping",
    });
    expect(rows.some((x) => x.verdict !== "ok" && x.session_id !== loopId)).toBe(false);
    await until(() => hookFor(loopId).length >= 1, "the trigger delivery");
    expect(hookFor(loopId).map((b) => [b.state, b.severity])).toEqual([["trigger", "critical"]]);
    const health = await admin("/health");
    expect(health.watchdog?.last_tick_at).toBeGreaterThan(0);
    expect(health.watchdog?.blind).toBe(false);

    const events = ((await admin("/api/events?limit=1000")).events as unknown[]).length;
    const again = await tick({ config: noModel, routerUrl: srv.url, statePath: realState() });
    expect(again.transitions).toEqual([]);
    expect(((await admin("/api/events?limit=1000")).events as unknown[]).length).toBe(events);
    expect(hookFor(loopId)).toHaveLength(1);
  });

  test("a healthy session active since the last tick: judged, not reported, no model call", async () => {
    const s = await oc.createSession({ title: "healthy two" });
    const file = join(oc.projectDir, "src", "new.js");
    router.on(
      s.id,
      steps(
        { kind: "tools", calls: [{ name: "write", args: { filePath: file, content: "export {};\n" } }] },
        { kind: "tools", calls: [{ name: "bash", args: { command: "ls src", description: "ls" } }] },
        { kind: "text", text: "done" },
      ),
    );
    await oc.prompt(s.id, "add a file");
    const r = await tick();
    expect(r.sessions).toBeGreaterThanOrEqual(1);
    expect(r.flagged).toBe(1); // the loop session is still flagged in its state, not re-reported
    expect(r.transitions).toEqual([]);
    expect(r.modelCalls).toBe(0);
    expect(ollama.calls).toHaveLength(1);
  });

  test("the looping session lands an edit: one transition back to ok", async () => {
    const app = join(oc.projectDir, "src", "app.js");
    let n = 0;
    router.on(loopId, () =>
      n++ === 0
        ? {
            kind: "tools",
            calls: [{ name: "edit", args: { filePath: app, oldString: "x = 2", newString: "x = 3" } }],
          }
        : { kind: "text", text: "fixed" },
    );
    await oc.prompt(loopId, "make the edit now");
    const r = await tick();
    expect(r.transitions.map((t) => [t.session_id, t.previous, t.verdict])).toEqual([
      [loopId, "looping", "ok"],
    ]);
    expect(r.transitions[0]?.second_opinion).toBeUndefined();
    expect(ollama.calls).toHaveLength(1);
    const again = await tick();
    expect(again.transitions).toEqual([]);
    expect(receiver.invalid).toEqual([]);
  });

  test("the real router: the recovery is one resolve on the channel", async () => {
    const r = await tick({ config: noModel, routerUrl: srv.url, statePath: realState() });
    expect(r.transitions.map((t) => [t.session_id, t.previous, t.verdict])).toEqual([
      [loopId, "looping", "ok"],
    ]);
    await until(() => hookFor(loopId).length >= 2, "the resolve delivery");
    expect(hookFor(loopId).map((b) => b.state)).toEqual(["trigger", "resolve"]);
    const rows = (await admin("/api/sessions")).sessions as Array<Record<string, unknown>>;
    expect(rows.find((x) => x.session_id === loopId)).toMatchObject({ verdict: "ok" });
  });

  const noDesktop = desktopToolsMissing();
  if (noDesktop) console.log(`[skip] router-down desktop alert: ${noDesktop}`);
  test.skipIf(noDesktop !== null)(
    "router down: one critical notify-send alert on a real session bus, not repeated",
    async () => {
      // A private session bus with python3-dbusmock's notification daemon (test/helpers/dbus.ts).
      const bus = await startSessionBus();
      try {
        const busEnv = { ...env, DBUS_SESSION_BUS_ADDRESS: bus.address };
        const deadRouter = `http://127.0.0.1:${await freePort()}`;
        const downState = join(tmp, "down", "watchdog.json");
        const before = receiver.bodies.length;
        const first = await tick({ routerUrl: deadRouter, statePath: downState, env: busEnv });
        expect(first.router).toBe("down");
        expect(first.alerted).toBe(true);
        const second = await tick({ routerUrl: deadRouter, statePath: downState, env: busEnv });
        expect(second.router).toBe("down");
        expect(second.alerted).toBe(false);

        const got = bus.notifications();
        expect(got.map((n) => [n.app, n.summary, n.urgency])).toEqual([
          ["stallguard", "stallguard: router is down", 2],
        ]);
        expect(got[0]?.body).toContain(deadRouter);
        expect(receiver.bodies.length).toBe(before);
      } finally {
        await bus.stop();
      }
    },
  );
});
