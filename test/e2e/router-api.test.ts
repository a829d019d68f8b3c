// The router extension's HTTP API against a real server on a free loopback
// port with a real SQLite file: /progress validation, auth and idempotency,
// the Sessions rows, Stop/Resume, knobs (validation and persistence across a
// restart), warn-mode alerts through a real webhook channel, and hostile
// input that must leave the server up and the database unchanged.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import type { Transition, WireSignals } from "../../shared/index.ts";
import { type Hook, startHook, webhookConfig } from "../helpers/hook.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv } from "../helpers/router-env.ts";
import {
  heartbeatSession,
  signals as wireSignals,
  transition as wireTransition,
} from "../helpers/wire-fixtures.ts";

const ADMIN = "admin-token-for-tests";
const PLUGIN = "plugin-token-for-tests";

const signals = (over: Partial<WireSignals> = {}): WireSignals =>
  wireSignals({
    calls: 30,
    calls_since_landed: 30,
    dup_share: 0.5,
    ndup_share: 0.5,
    context_tokens: 52_000,
    max_context_tokens: 52_000,
    ...over,
  });

function transition(over: Partial<Transition> = {}): Transition {
  const session = over.session_id ?? "ses_worker";
  const at = over.at ?? 1_700_000_000_000;
  return wireTransition(session, "ses_root", "build", over.previous ?? "ok", over.verdict ?? "stalling", at, {
    reason: "duplicates",
    signals: signals(),
    top_target: "read src/navbar.js",
    top_target_count: 9,
    report: "[stallguard] read src/navbar.js x9, 0 landed",
    ...over,
  });
}

async function until<T>(fn: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("router extension API", () => {
  let dir: string;
  let dbPath: string;
  let configPath: string;
  let hook: Hook;
  let srv: RunningServer;
  const lines: string[] = [];
  let env: NodeJS.ProcessEnv;

  const start = () => startServer({ port: 0, dbPath, configPath, env, log: (l) => lines.push(l) });
  const post = (body: unknown, token: string | null = PLUGIN, raw?: string) =>
    fetch(`${srv.url}/progress`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: raw ?? JSON.stringify(body),
    });
  const api = (path: string, init: RequestInit = {}, token = ADMIN) =>
    fetch(`${srv.url}${path}`, {
      ...init,
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${token}`,
        ...(init.headers ?? {}),
      },
    });
  const sessions = async () =>
    ((await (await api("/api/sessions")).json()) as { sessions: Array<Record<string, unknown>> }).sessions;
  const eventCount = async () =>
    ((await (await api("/api/events?limit=10000")).json()) as { events: unknown[] }).events.length;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-router-api-"));
    env = routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_TOKEN: PLUGIN });
    dbPath = join(dir, "state", "stallguard.db");
    configPath = join(dir, "local.yaml");
    hook = await startHook();
    writeFileSync(
      configPath,
      webhookConfig(hook.url, ["quiet_window: 0s", "rate_limit: { count: 100, per: 1h }"]),
    );
    srv = await start();
  });

  afterAll(async () => {
    await srv?.close();
    await hook?.close();
    if (process.env.STALLGUARD_KEEP_TMP) console.log(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  });

  it("binds loopback and answers /health", async () => {
    expect(srv.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const h = (await (await fetch(`${srv.url}/health`)).json()) as Record<string, unknown>;
    expect(h).toMatchObject({ ok: true, db: "ok", watchdog: null });
    expect(lines.join("\n")).not.toContain(ADMIN);
  });

  it("rejects bad tokens, unknown fields, garbage and oversized bodies", async () => {
    expect((await post(transition(), null)).status).toBe(401);
    expect((await post(transition(), "wrong")).status).toBe(401);

    const unknown = await post({ ...transition(), bogus: 1 });
    expect(unknown.status).toBe(400);
    const u = (await unknown.json()) as { error: string; issues: string[] };
    expect(u.issues).toContain("bogus: unknown field");

    const nested = await post({ ...transition(), signals: { ...signals(), dup_share: 2 } });
    expect(nested.status).toBe(400);
    expect(((await nested.json()) as { issues: string[] }).issues.join("\n")).toMatch(
      /^signals\.dup_share: /m,
    );

    const garbage = await post(null, PLUGIN, "{not json");
    expect(garbage.status).toBe(400);
    expect(await garbage.json()).toMatchObject({ error: "body is not JSON" });

    const big = await post(null, PLUGIN, JSON.stringify({ ...transition(), report: "x".repeat(70_000) }));
    expect(big.status).toBe(413);

    expect(await eventCount()).toBe(0);
  });

  it("counts a retried transition once", async () => {
    const t = transition({ session_id: "ses_dup", parent_id: null, root_id: "ses_dup" });
    const first = await post(t);
    expect(await first.json()).toEqual({ accepted: 1, duplicates: 0, directives: [] });
    const again = await post([t, t]);
    expect(await again.json()).toEqual({ accepted: 0, duplicates: 2, directives: [] });
    const row = (await sessions()).find((s) => s.session_id === "ses_dup");
    expect(row).toMatchObject({ flags: 1, verdict: "stalling" });
    // Per-session series need the admin token (server.public_session_metrics is off).
    const metrics = await (await api("/metrics")).text();
    expect(metrics).toMatch(/^stallguard_warnings_total\{verdict="stalling"\} 1$/m);
    expect(metrics).toMatch(/^stallguard_progress_duplicates_total 2$/m);
    expect(metrics).toMatch(
      /^stallguard_warning\{session_id="ses_dup",root_id="ses_dup",agent="build",verdict="stalling",reason="duplicates",stage="warned",top_target="read src\/navbar.js",top_target_count="9"\} 1$/m,
    );
    expect(metrics).toMatch(
      /^stallguard_warning_turns_since_landed\{session_id="ses_dup",root_id="ses_dup"\} 12$/m,
    );
  });

  it("keeps worst and flags in /api/sessions after the flag cleared, and alerts in warn mode", async () => {
    const t0 = 1_700_000_100_000;
    expect((await post(transition({ at: t0, verdict: "looping" }))).status).toBe(200);
    expect(
      (await post(transition({ at: t0 + 60_000, verdict: "ok", previous: "looping", reason: null }))).status,
    ).toBe(200);
    await post({
      type: "heartbeat",
      instance_id: "inst-a",
      plugin_version: "0.1.0",
      at: t0 + 61_000,
      sessions: [
        heartbeatSession("ses_worker", {
          parent_id: "ses_root",
          root_id: "ses_root",
          turns: 14,
          last_landed_at: t0 + 59_000,
          context_tokens: 61_000,
        }),
      ],
    });
    const row = (await sessions()).find((s) => s.session_id === "ses_worker");
    expect(row).toMatchObject({
      session_id: "ses_worker",
      parent_id: "ses_root",
      root_id: "ses_root",
      agent: "build",
      verdict: "ok",
      worst: "looping",
      flags: 1,
      stage: "none",
      plugin_live: true,
      plugin_version: "0.1.0",
      turns_since_landed: 0,
      context_tokens: 61_000,
      top_target: "read src/navbar.js",
      top_target_count: 9,
      source: "plugin",
      refused: false,
      stopped_by: null,
      stopped_at: null,
    });
    for (const key of ["usd_since_landed", "last_seen_at", "reason", "report"])
      expect(row).toHaveProperty(key);

    // The webhook got the trigger (looping = critical) and the resolve for this tree.
    const tree = () => hook.bodies.filter((b) => (b as { dedup_key?: string }).dedup_key === "ses_root");
    const alerts = (await until(() => (tree().length >= 2 ? tree() : undefined))) as Array<{
      state: string;
      severity: string;
    }>;
    expect(alerts.map((a) => [a.state, a.severity])).toEqual([
      ["trigger", "critical"],
      ["resolve", "critical"],
    ]);
    const events = (
      (await (await api("/api/events?limit=5")).json()) as { events: Array<{ verdict: string }> }
    ).events;
    expect(events.slice(0, 2).map((e) => e.verdict)).toEqual(["ok", "looping"]);
    expect((await api("/api/events?limit=0")).status).toBe(400);
  });

  it("records watchdog ticks for /health", async () => {
    const tick = {
      type: "watchdog_tick",
      at: 1_700_000_200_000,
      servers: 0,
      sessions: 0,
      flagged: 0,
      blind: true,
    };
    expect(await (await post(tick)).json()).toMatchObject({ accepted: 1 });
    const h = (await (await fetch(`${srv.url}/health`)).json()) as {
      watchdog: Record<string, unknown> | null;
    };
    expect(h.watchdog).toMatchObject({ blind: true, flagged: 0 });
    expect(typeof h.watchdog?.last_tick_at).toBe("number");
    expect(await (await fetch(`${srv.url}/metrics`)).text()).toMatch(/^stallguard_watchdog_blind 1$/m);
  });

  it("keeps /api behind the admin token", async () => {
    expect((await fetch(`${srv.url}/api/sessions`)).status).toBe(401);
    expect((await api("/api/sessions", {}, "nope")).status).toBe(401);
    expect((await api("/api/sessions", {}, PLUGIN)).status).toBe(401);
    expect((await fetch(`${srv.url}/api/trees/ses_root/stop`, { method: "POST" })).status).toBe(401);
    expect((await api("/api/channels")).status).toBe(200);
  });

  it("stops and resumes a tree, recording who and when", async () => {
    const stop = await api("/api/trees/ses_root/stop", {
      method: "POST",
      body: JSON.stringify({ by: "alice" }),
    });
    expect(stop.status).toBe(200);
    const s = (await stop.json()) as { root_id: string; state: string; by: string; at: number };
    expect(s).toMatchObject({ root_id: "ses_root", state: "stopped", by: "alice" });
    const stopped = (await sessions()).filter((r) => r.root_id === "ses_root");
    expect(stopped.length).toBeGreaterThan(0);
    for (const r of stopped)
      expect(r).toMatchObject({ refused: true, stopped_by: "alice", stopped_at: s.at });

    const bad = await api("/api/trees/ses_root/resume", {
      method: "POST",
      body: JSON.stringify({ who: "x" }),
    });
    expect(bad.status).toBe(400);
    const resume = await api("/api/trees/ses_root/resume", { method: "POST" });
    expect(await resume.json()).toMatchObject({ root_id: "ses_root", state: "running", by: "admin" });
    expect((await sessions()).find((r) => r.session_id === "ses_worker")).toMatchObject({ refused: false });
    const trees = (await (await api("/api/trees")).json()) as { log: Array<{ state: string; by: string }> };
    expect(trees.log.slice(0, 2).map((l) => [l.state, l.by])).toEqual([
      ["running", "admin"],
      ["stopped", "alice"],
    ]);
  });

  it("lists knobs, validates PUTs with the schema and keeps them across a restart", async () => {
    const list = (await (await api("/api/knobs")).json()) as {
      knobs: Array<{ path: string; kind: string; value: unknown }>;
      excluded: Array<{ path: string; why: string }>;
    };
    expect(list.knobs.find((k) => k.path === "thresholds.dup_warn")).toMatchObject({
      kind: "number",
      value: 0.4,
    });
    expect(list.excluded.map((e) => e.path)).toContain("server.port");

    const put = (body: unknown) => api("/api/knobs", { method: "PUT", body: JSON.stringify(body) });
    const tooBig = await put({ path: "thresholds.dup_warn", value: 7 });
    expect(tooBig.status).toBe(400);
    expect(((await tooBig.json()) as { issues: string[] }).issues[0]).toMatch(/^thresholds\.dup_warn: /);
    expect((await put({ path: "server.port", value: 1 })).status).toBe(400);
    expect((await put({ path: "no.such.knob", value: 1 })).status).toBe(400);
    expect((await put({ path: "progress.mode", value: "panic" })).status).toBe(400);
    expect((await put({ path: "thresholds.dup_warn" })).status).toBe(400);
    expect((await put({ path: "thresholds.dup_warn", value: 0.55, extra: 1 })).status).toBe(400);

    expect(await (await put({ path: "thresholds.dup_warn", value: 0.55 })).json()).toEqual({
      path: "thresholds.dup_warn",
      value: 0.55,
    });
    expect(await (await put({ path: "progress.heartbeat", value: 120 })).json()).toEqual({
      path: "progress.heartbeat",
      value: "2m",
    });

    await srv.close();
    srv = await start();
    const after = (await (await api("/api/knobs")).json()) as {
      knobs: Array<{ path: string; value: unknown; overridden: boolean }>;
    };
    expect(after.knobs.find((k) => k.path === "thresholds.dup_warn")).toMatchObject({
      value: 0.55,
      overridden: true,
    });
    expect(after.knobs.find((k) => k.path === "progress.heartbeat")?.value).toBe("2m");
    // And the sessions from before the restart are still there.
    expect((await sessions()).find((s) => s.session_id === "ses_worker")).toMatchObject({ worst: "looping" });
  });

  it("survives hostile input and leaves the database unchanged", async () => {
    const before = await eventCount();
    const bodies: string[] = [
      "[".repeat(30_000) + "]".repeat(30_000),
      `{"a":${'{"a":'.repeat(10_000)}1${"}".repeat(10_000)}}`,
      JSON.stringify(Array.from({ length: 5000 }, () => 1)),
      JSON.stringify(Array.from({ length: 101 }, () => transition())),
      JSON.stringify({ ...transition(), signals: "'; DROP TABLE sessions; --" }),
      JSON.stringify({ ...transition(), at: -1 }),
      JSON.stringify({ ...transition(), at: 1e300 }),
      JSON.stringify({ ...transition(), session_id: "" }),
      JSON.stringify({ ...transition(), agent: "Robert'); DROP TABLE sessions;--" }),
      JSON.stringify({ ...transition(), __proto__: { verdict: "ok" }, constructor: 1 }),
      JSON.stringify({ type: "heartbeat", sessions: Array.from({ length: 3000 }, () => ({})) }),
      "\u0000\u0001\u0002",
      "null",
      "42",
      '"string"',
    ];
    for (const raw of bodies) {
      const r = await post(null, PLUGIN, raw);
      expect([400, 413], raw.slice(0, 40)).toContain(r.status);
    }
    // SQL-ish text in an id is refused by the id charset; in free text it is stored as data, not run.
    expect((await post(transition({ session_id: "x'); DROP TABLE sessions; --" }))).status).toBe(400);
    const sqlish = transition({
      session_id: "ses_sqlish",
      report: "x'); DROP TABLE sessions; --",
      at: 1_700_000_500_000,
    });
    const ok = await post({ ...sqlish, id: "p:sqlish:1700000500000:os" });
    expect(ok.status).toBe(200);
    expect(await eventCount()).toBe(before + 1);
    expect((await sessions()).some((s) => s.session_id === sqlish.session_id)).toBe(true);
    expect(((await (await fetch(`${srv.url}/health`)).json()) as { ok: boolean }).ok).toBe(true);
  });

  it("refuses to bind a non-loopback address without both tokens", async () => {
    await expect(
      startServer({
        port: 0,
        host: "0.0.0.0",
        dbPath: join(dir, "other.db"),
        configPath,
        env: routerEnv(dir),
        log: () => {},
      }),
    ).rejects.toThrow(/refusing to bind non-loopback address 0\.0\.0\.0/);
  });

  it("stops start-up on a bad config with the key path", async () => {
    const bad = join(dir, "bad.yaml");
    writeFileSync(bad, "thresholds:\n  window: 3\n");
    await expect(
      startServer({ port: 0, dbPath: join(dir, "other.db"), configPath: bad, env, log: () => {} }),
    ).rejects.toThrow(/thresholds\.window/);
  });
});

describe("router extension with the gate", () => {
  let dir: string;
  let model: ModelServer;
  let srv: RunningServer;
  const auth = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-router-gate-"));
    const configPath = join(dir, "local.yaml");
    writeFileSync(
      configPath,
      "watchdog:\n  enabled: false\nnotifications:\n  channels: []\nprices:\n  fake-model: { prompt: 1, completion: 2 }\n",
    );
    model = await startModelServer({
      script: () => ({ kind: "text", text: "hi", usage: { prompt_tokens: 1000, completion_tokens: 10 } }),
    });
    srv = await startServer({
      port: 0,
      dbPath: join(dir, "gate.db"),
      configPath,
      upstream: model.url,
      env: routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN }),
      log: () => {},
    });
  });
  afterAll(async () => {
    await srv?.close();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const chat = (conversation: string, parent: string | null) =>
    fetch(`${srv.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${srv.clientKeys[0]?.key}`,
        "x-router-conversation": conversation,
        "x-router-agent": "general",
        ...(parent ? { "x-router-parent": parent } : {}),
      },
      body: JSON.stringify({ model: "fake-model", messages: [{ role: "user", content: "x" }] }),
    });
  const rows = async () =>
    (
      (await (await fetch(`${srv.url}/api/sessions`, { headers: auth })).json()) as {
        sessions: Array<Record<string, unknown>>;
      }
    ).sessions;

  it("learns trees and spend from proxied requests, and Stop/Resume refuses and lets through", async () => {
    expect((await chat("ses_root2", null)).status).toBe(200);
    expect((await chat("ses_child2", "ses_root2")).status).toBe(200);
    expect((await chat("ses_child2", "ses_root2")).status).toBe(200);
    const child = (await rows()).find((r) => r.session_id === "ses_child2");
    expect(child).toMatchObject({
      root_id: "ses_root2",
      parent_id: "ses_root2",
      agent: "general",
      source: "gate",
      turns_since_landed: 2,
      usd_since_landed: 0.00204,
      context_tokens: 1000,
      plugin_live: false,
    });
    // The root's spend since landed includes its child's requests.
    expect((await rows()).find((r) => r.session_id === "ses_root2")).toMatchObject({ turns_since_landed: 3 });

    const stop = await fetch(`${srv.url}/api/trees/ses_root2/stop`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ by: "carol" }),
    });
    expect(stop.status).toBe(200);
    const refused = await chat("ses_child2", "ses_root2");
    // The default refusal shape (README "Refusal shape"): 403 with retry-after: 0.
    expect(refused.status).toBe(403);
    expect(refused.headers.get("retry-after")).toBe("0");
    const body = (await refused.json()) as { error: { message: string } };
    expect(body.error.message).toContain("ses_child2");
    expect(body.error.message).toContain("carol");
    const asked = (await (await fetch(`${srv.url}/gate/ses_child2`)).json()) as Record<string, unknown>;
    expect(asked).toMatchObject({ refused: true, scope: "tree", root_id: "ses_root2" });

    await fetch(`${srv.url}/api/trees/ses_root2/resume`, { method: "POST", headers: auth, body: "{}" });
    expect((await chat("ses_child2", "ses_root2")).status).toBe(200);
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).toMatch(/^stallguard_refusals_total 1$/m);
    expect(metrics).toMatch(/^stallguard_gate_/m);
    // The refused request never reached the upstream.
    expect(model.requests.length).toBe(4);
  });

  it("applies a refusal-status knob change without a restart", async () => {
    const put = await fetch(`${srv.url}/api/knobs`, {
      method: "PUT",
      headers: auth,
      body: JSON.stringify({ path: "progress.refusal.status", value: 409 }),
    });
    expect(put.status).toBe(200);
    await fetch(`${srv.url}/api/trees/ses_root2/stop`, { method: "POST", headers: auth, body: "{}" });
    expect((await chat("ses_root2", null)).status).toBe(409);
  });
});
