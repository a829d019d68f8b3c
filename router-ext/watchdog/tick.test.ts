// The tick against real local HTTP servers standing in for opencode (stored
// message shapes), the router and a local model: roll-up through children,
// blind on an unexpected shape (warned once), overlapping ticks, no server,
// a model that is down, and an undelivered report retried with the same id.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Config, type ProgressMessage, parseConfig, parseProgressBody } from "../../shared/index.ts";
import { runWatchdogTick, type WatchdogTickOptions } from "./tick.ts";

type Json = Record<string, unknown>;

interface FakeSession {
  id: string;
  parentID?: string;
  updated: number;
  messages: Json[];
}

let clock = 1_800_000_000_000;

function user(sessionId: string, t: number): Json {
  return {
    info: { id: `msg_u${t}`, sessionID: sessionId, role: "user", time: { created: t }, agent: "build" },
    parts: [{ type: "text", text: "the task" }],
  };
}

function assistant(sessionId: string, t: number, agent: string, part: Json): Json {
  return {
    info: {
      id: `msg_a${sessionId}${t}`,
      sessionID: sessionId,
      role: "assistant",
      time: { created: t, completed: t + 5 },
      agent,
      modelID: "m",
      providerID: "p",
      cost: 0.01,
      tokens: { input: 1000, output: 10, reasoning: 0, cache: { read: 0, write: 0 } },
    },
    parts: [part],
  };
}

/** A completed tool part as opencode stores it, timed just after its message at `t`. */
function toolPart(
  t: number,
  tool: string,
  callID: string,
  input: Json,
  output: string,
  metadata: Json = {},
): Json {
  return {
    type: "tool",
    tool,
    callID,
    state: { status: "completed", input, output, metadata, time: { start: t + 1, end: t + 2 } },
  };
}

const readPart = (t: number, path: string) => toolPart(t, "read", `r${t}`, { filePath: path }, "file body");

const editPart = (t: number, path: string, n: number) =>
  toolPart(t, "edit", `e${t}`, { filePath: path, oldString: `v${n}`, newString: `v${n + 1}` }, "", {
    diff: `--- a${path}\n+++ b${path}\n@@ -1 +1 @@\n-v${n}\n+v${n + 1}\n`,
  });

/** A session that reads the same file `n` times, one call per step. */
function readLoop(id: string, start: number, n: number, opts: { parentID?: string; agent?: string } = {}) {
  const messages = [user(id, start)];
  for (let i = 1; i <= n; i++)
    messages.push(
      assistant(id, start + i * 100, opts.agent ?? "build", readPart(start + i * 100, "/p/plan.md")),
    );
  return {
    id,
    ...(opts.parentID ? { parentID: opts.parentID } : {}),
    updated: start + n * 100 + 10,
    messages,
  };
}

/** A worker that lands a distinct edit every step. */
function editor(id: string, parentID: string, start: number, n: number): FakeSession {
  const messages = [user(id, start)];
  for (let i = 1; i <= n; i++)
    messages.push(assistant(id, start + i * 100, "general", editPart(start + i * 100, `/p/src/f${i}.ts`, i)));
  return { id, parentID, updated: start + n * 100 + 10, messages };
}

interface FakeOpencode {
  url: string;
  sessions: Map<string, FakeSession>;
  shape: "ok" | "bad-list" | "bad-messages" | "500";
  delayMs: number;
  hits: string[];
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

function toApi(s: FakeSession): Json {
  return {
    id: s.id,
    slug: s.id,
    projectID: "prj",
    directory: "/p",
    title: "t",
    version: "1.18.33",
    ...(s.parentID ? { parentID: s.parentID } : {}),
    time: { created: s.updated - 10_000, updated: s.updated },
  };
}

async function startFakeOpencode(): Promise<FakeOpencode> {
  const fake: FakeOpencode = {
    url: "",
    sessions: new Map(),
    shape: "ok",
    delayMs: 0,
    hits: [],
    close: async () => undefined,
  };
  const srv = createServer(async (req: IncomingMessage, res) => {
    const u = new URL(req.url ?? "/", "http://x");
    fake.hits.push(`${req.method} ${u.pathname}`);
    if (fake.delayMs) await new Promise((r) => setTimeout(r, fake.delayMs));
    if (u.pathname === "/global/health") return send(res, 200, { healthy: true });
    if (u.pathname === "/session") {
      if (fake.shape === "500") return send(res, 500, { name: "UnknownError" });
      if (fake.shape === "bad-list") return send(res, 200, { sessions: [] });
      const start = Number(u.searchParams.get("start") ?? 0);
      const list = [...fake.sessions.values()]
        .filter((s) => s.updated >= start)
        .sort((a, b) => b.updated - a.updated);
      return send(res, 200, list.map(toApi));
    }
    const m = /^\/session\/([^/]+)(\/children|\/message)?$/.exec(u.pathname);
    const s = m ? fake.sessions.get(decodeURIComponent(m[1] as string)) : undefined;
    if (!m || !s) return send(res, 404, { name: "NotFoundError" });
    if (m[2] === "/children")
      return send(res, 200, [...fake.sessions.values()].filter((c) => c.parentID === s.id).map(toApi));
    if (m[2] === "/message") {
      if (fake.shape === "bad-messages") return send(res, 200, { items: s.messages });
      return send(res, 200, s.messages);
    }
    return send(res, 200, toApi(s));
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  fake.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  fake.close = () =>
    new Promise((r) => {
      srv.closeAllConnections();
      srv.close(() => r());
    });
  return fake;
}

interface Receiver {
  url: string;
  status: number;
  bodies: ProgressMessage[][];
  /** The Authorization header of every body received. */
  auth: string[];
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const rec: Receiver = { url: "", status: 200, bodies: [], auth: [], close: async () => undefined };
  const srv: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => {
      raw += c.toString("utf8");
    });
    req.on("end", () => {
      rec.auth.push(String(req.headers.authorization ?? ""));
      const r = parseProgressBody(JSON.parse(raw));
      if (!r.ok) return send(res, 400, { error: "invalid", issues: r.errors });
      if (rec.status !== 200) return send(res, rec.status, { error: "no" });
      rec.bodies.push(r.value);
      send(res, 200, { accepted: r.value.length, duplicates: 0 });
    });
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  rec.url = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  rec.close = () => new Promise((r) => srv.close(() => r()));
  return rec;
}

function makeConfig(over: Json = {}): Config {
  const r = parseConfig([
    { source: "test", value: { watchdog: { timeout: "2s", lookback: "1h" }, ...over } },
  ]);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config;
}

describe("runWatchdogTick with local stand-ins", () => {
  let oc: FakeOpencode;
  let rec: Receiver;
  let tmp: string;
  let n = 0;
  const logs: string[] = [];
  const env = { HOME: "/nonexistent-home", XDG_DATA_HOME: "/nonexistent-data" } as NodeJS.ProcessEnv;

  beforeAll(async () => {
    oc = await startFakeOpencode();
    rec = await startReceiver();
    tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-tick-"));
  });
  afterAll(async () => {
    await oc.close();
    await rec.close();
    rmSync(tmp, { recursive: true, force: true });
  });

  const fresh = () => {
    oc.sessions.clear();
    oc.shape = "ok";
    oc.delayMs = 0;
    rec.status = 200;
    rec.bodies.length = 0;
    logs.length = 0;
    n++;
    return join(tmp, `s${n}`, "watchdog.json");
  };
  const tick = (statePath: string, over: Partial<WatchdogTickOptions> = {}) =>
    runWatchdogTick({
      config: makeConfig(),
      servers: [oc.url],
      routerUrl: rec.url,
      token: null,
      statePath,
      now: clock,
      env,
      log: (l) => logs.push(l),
      ...over,
    });

  test("children roll up: an orchestrator whose worker lands changes stays ok; the same reads alone loop", async () => {
    const statePath = fresh();
    const t0 = clock - 30 * 60_000;
    // The worker's last activity is old (outside the listing window): only /children finds it.
    oc.sessions.set("ses_orch", {
      ...readLoop("ses_orch", t0, 30, { agent: "atlas" }),
      updated: clock - 60_000,
    });
    const worker = editor("ses_worker", "ses_orch", t0 + 50, 29);
    oc.sessions.set("ses_worker", worker);
    oc.sessions.set("ses_alone", { ...readLoop("ses_alone", t0, 30), updated: clock - 60_000 });
    const r = await tick(statePath, { config: makeConfig({ watchdog: { timeout: "2s", lookback: "20m" } }) });
    expect(r.blind).toBe(false);
    expect(r.sessions).toBe(2 + 1);
    expect(r.transitions.map((t) => [t.session_id, t.verdict])).toEqual([["ses_alone", "looping"]]);
    expect(oc.hits).toContain("GET /session/ses_orch/children");
    expect(oc.hits).toContain("GET /session/ses_worker/message");
  });

  test("a child found active walks up to its root; the tree is judged together", async () => {
    const statePath = fresh();
    const t0 = clock - 10 * 60_000;
    oc.sessions.set("ses_root", { ...readLoop("ses_root", t0 - 3_600_000, 3), updated: t0 - 3_600_000 });
    oc.sessions.set("ses_kid", readLoop("ses_kid", t0, 30, { parentID: "ses_root", agent: "Explore" }));
    const r = await tick(statePath);
    expect(oc.hits).toContain("GET /session/ses_root");
    const kid = r.transitions.find((t) => t.session_id === "ses_kid");
    expect(kid).toMatchObject({ root_id: "ses_root", parent_id: "ses_root", agent: "explore" });
    expect(kid?.signals.read_only).toBe(true);
  });

  test("an unexpected /session shape: blind, one warning, never a silent all-healthy", async () => {
    const statePath = fresh();
    oc.sessions.set("ses_x", readLoop("ses_x", clock - 60_000, 30));
    oc.shape = "bad-list";
    const a = await tick(statePath);
    const b = await tick(statePath);
    for (const r of [a, b]) {
      expect(r.blind).toBe(true);
      expect(r.blindReason).toBe("unexpected_shape");
      expect(r.transitions).toEqual([]);
    }
    expect(logs.filter((l) => l.includes("blind"))).toHaveLength(1);
    expect(logs.find((l) => l.includes("blind"))).toContain("GET /session");
    const ticks = rec.bodies.flat().filter((m) => m.type === "watchdog_tick");
    expect(ticks.map((m) => m.type === "watchdog_tick" && m.blind)).toEqual([true, true]);
    // Once opencode answers in the known shape again, the tick sees the session.
    oc.shape = "ok";
    const c = await tick(statePath);
    expect(c.blind).toBe(false);
    expect(c.transitions.map((t) => t.session_id)).toEqual(["ses_x"]);
  });

  test("an unexpected message shape is blind too", async () => {
    const statePath = fresh();
    oc.sessions.set("ses_y", readLoop("ses_y", clock - 60_000, 30));
    oc.shape = "bad-messages";
    const r = await tick(statePath);
    expect(r).toMatchObject({ blind: true, blindReason: "unexpected_shape", transitions: [] });
    expect(logs.join("\n")).toContain("GET /session/{id}/message");
  });

  test("a server that answers the probe but fails GET /session: blind (api_error), warned once", async () => {
    const statePath = fresh();
    oc.shape = "500";
    const a = await tick(statePath);
    const b = await tick(statePath);
    for (const r of [a, b]) expect(r).toMatchObject({ blind: true, blindReason: "api_error", servers: 1 });
    expect(logs.filter((l) => l.includes("the watchdog is blind"))).toHaveLength(1);
  });

  test("two overlapping ticks: the second is skipped, not stacked", async () => {
    const statePath = fresh();
    oc.sessions.set("ses_z", readLoop("ses_z", clock - 60_000, 30));
    oc.delayMs = 300;
    const [a, b] = await Promise.all([tick(statePath), tick(statePath)]);
    const skipped = [a, b].filter((r) => r.skipped);
    expect(skipped).toHaveLength(1);
    const ran = [a, b].find((r) => !r.skipped);
    expect(ran?.transitions.map((t) => t.session_id)).toEqual(["ses_z"]);
    expect(rec.bodies).toHaveLength(1);
  });

  test("a model that is down degrades to the deterministic verdict; a healthy tick asks nothing", async () => {
    const statePath = fresh();
    let modelHits = 0;
    const model = createServer((_req, res) => {
      modelHits++;
      res.writeHead(503).end();
    });
    await new Promise<void>((r) => model.listen(0, "127.0.0.1", r));
    const base = `http://127.0.0.1:${(model.address() as AddressInfo).port}`;
    const config = makeConfig({
      local_compute: { enabled: true },
      verification: { base_url: base, model: "judge" },
    });
    try {
      oc.sessions.set("ses_ok", editor("ses_ok", "ses_none", clock - 60_000, 5));
      const healthy = await tick(statePath, { config });
      expect(healthy.transitions).toEqual([]);
      expect(healthy.modelCalls).toBe(0);
      expect(modelHits).toBe(0);
      oc.sessions.set("ses_m", readLoop("ses_m", clock - 10_000, 30));
      const r = await tick(statePath, { config, now: clock + 1000 });
      expect(r.modelCalls).toBe(1);
      expect(modelHits).toBe(1);
      expect(r.transitions).toHaveLength(1);
      expect(r.transitions[0]).toMatchObject({
        session_id: "ses_m",
        verdict: "looping",
        second_opinion: null,
      });
      expect(logs.join("\n")).toContain("deterministic verdict stands");
    } finally {
      await new Promise<void>((r) => model.close(() => r()));
    }
  });

  test("local_compute off: no model call even for a flagged session", async () => {
    const statePath = fresh();
    oc.sessions.set("ses_n", readLoop("ses_n", clock - 60_000, 30));
    const config = makeConfig({ verification: { base_url: "http://127.0.0.1:1" } });
    const r = await tick(statePath, { config });
    expect(r.modelCalls).toBe(0);
    expect(r.transitions[0]?.second_opinion).toBeUndefined();
  });

  test("a refused or failed report is not remembered: the next tick sends the same transition id", async () => {
    const statePath = fresh();
    oc.sessions.set("ses_r", readLoop("ses_r", clock - 60_000, 30));
    rec.status = 401;
    const a = await tick(statePath);
    expect(a.router).toBe("refused");
    expect(logs.join("\n")).toContain("STALLGUARD_TOKEN");
    const down = await tick(statePath, { routerUrl: "http://127.0.0.1:1", now: clock + 1000 });
    expect(down.router).toBe("down");
    expect(down.alerted).toBe(false); // no session bus in this env: logged, not thrown
    expect(logs.join("\n")).toContain("desktop alert failed");
    rec.status = 200;
    const b = await tick(statePath, { now: clock + 2000 });
    expect(b.router).toBe("ok");
    expect(b.transitions.map((t) => t.id)).toEqual(a.transitions.map((t) => t.id));
    const c = await tick(statePath, { now: clock + 3000 });
    expect(c.transitions).toEqual([]);
    clock += 10_000;
  });

  test("without STALLGUARD_TOKEN the tick presents the plugin.token file serve wrote", async () => {
    const statePath = fresh();
    oc.sessions.set("ses_tok", { ...readLoop("ses_tok", clock - 30 * 60_000, 30), updated: clock - 60_000 });
    const home = join(tmp, "home");
    mkdirSync(join(home, ".config", "stallguard"), { recursive: true });
    writeFileSync(join(home, ".config", "stallguard", "plugin.token"), "token-from-file\n", { mode: 0o600 });
    rec.auth.length = 0;
    // token undefined: the tick looks for it itself (STALLGUARD_TOKEN, else the file).
    await tick(statePath, { token: undefined, env: { HOME: home } as NodeJS.ProcessEnv });
    expect(rec.auth.length).toBeGreaterThan(0);
    expect(new Set(rec.auth)).toEqual(new Set(["Bearer token-from-file"]));
    oc.sessions.delete("ses_tok");
  });
});
