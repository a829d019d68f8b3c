// The session page's API and the marks through the whole app (createApp, the
// admin token, a real SQLite store): a false alarm lifts every refusal in the
// tree (the gate lets it through), a confirmed loop lifts nothing, both are
// kept with who and when, shown in /api/sessions, counted on /metrics and
// exported as calibrate labels; the detail answer carries what the page draws.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema, type Heartbeat } from "../../../shared/index.ts";
import { loopEvidence, signals, transition } from "../../../test/helpers/wire-fixtures.ts";
import { served } from "../../breaker/testing.ts";
import { openSqliteStore, type SqliteStore } from "../../store/sqlite-store.ts";
import { createApp } from "../app.ts";
import { LiveConfig } from "../live-config.ts";

const TOKEN = "admin-token-for-marks";
const ROOT = "ses_mk_root";
const WORKER = "ses_mk_worker";
const SIBLING = "ses_mk_sibling";
const QUIET = "ses_mk_quiet";
const T0 = 1_800_000_000_000;

const heartbeat = (at: number, turns: number, landed: number | null): Heartbeat => ({
  type: "heartbeat",
  instance_id: "inst-mk-1",
  plugin_version: "0.1.0",
  at,
  sessions: [
    {
      session_id: WORKER,
      parent_id: ROOT,
      root_id: ROOT,
      agent: "general",
      verdict: "looping",
      turns,
      turns_since_landed: turns,
      last_landed_at: landed,
      context_tokens: 5000,
    },
  ],
});

describe("session page API and marks", () => {
  let store: SqliteStore;
  let app: ReturnType<typeof createApp>;
  let now = T0;
  const call = (method: string, path: string, body?: unknown, token: string | null = TOKEN) =>
    app.request(path, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        "content-type": "application/json",
      },
      body: body === undefined ? null : typeof body === "string" ? body : JSON.stringify(body),
    });
  // biome-ignore lint/suspicious/noExplicitAny: raw API JSON
  const json = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await call(method, path, body);
    expect(res.status, `${method} ${path}: ${await res.clone().text()}`).toBe(200);
    return res.json();
  };
  const refused = (session: string) =>
    store.decide({ sessionId: session, agent: "general", parent: ROOT, pluginVersion: null }, now).refused;

  beforeEach(async () => {
    now = T0;
    store = await openSqliteStore(":memory:", { now: () => now });
    const config = LiveConfig.create({
      fileLayers: [],
      flags: {},
      overrides: [
        { path: "progress.mode", value: "auto_recover" },
        { path: "progress.max_recoveries", value: 0 },
      ],
    });
    app = createApp({
      store,
      config,
      adminToken: TOKEN,
      pluginToken: TOKEN,
      version: "dev",
      now: () => now,
    });
    store.recordRequest(served("m", WORKER, T0 - 5000, ROOT));
    store.recordRequest({ ...served("m", WORKER, T0 - 4000, ROOT), cost_usd: 0.5 });
    await json("POST", "/progress", [
      transition(SIBLING, ROOT, "general", "ok", "ok", T0 - 9000, { id: "p:sib:ok:0001", reason: null }),
      transition(QUIET, null, "build", "ok", "ok", T0 - 9000, { id: "p:quiet:ok:0001", reason: null }),
      heartbeat(T0 - 3000, 4, T0 - 8000),
      heartbeat(T0 - 2500, 4, T0 - 8000), // unchanged: not stored again
      heartbeat(T0 - 2000, 6, T0 - 8000),
      transition(WORKER, ROOT, "general", "ok", "looping", T0 - 1000, {
        top_target: "read src/app.ts",
        top_target_count: 14,
        signals: signals({ fail_streak: 3, context_tokens: 5000 }),
        evidence: loopEvidence("read src/app.ts"),
        report: "[stallguard] A sub-agent is looping.",
      }),
    ]);
    // max_recoveries 0: the first detection is the hard stop; an admin also stopped the sibling.
    await store.setRefusal("session", SIBLING, "stopped", "alice", T0 - 500, "admin Stop");
  });
  afterEach(async () => await store.close());

  it("a false alarm is kept with who and when, lifts every refusal in the tree, and the gate lets it through", async () => {
    expect(refused(WORKER)).toBe(true);
    expect(refused(SIBLING)).toBe(true);
    expect((await call("POST", `/api/sessions/${WORKER}/mark`, { kind: "false_alarm" }, null)).status).toBe(
      401,
    );
    expect((await call("POST", `/api/sessions/${WORKER}/mark`, { kind: "nope" })).status).toBe(400);
    expect((await call("POST", `/api/sessions/${WORKER}/mark`, "kind=false_alarm")).status).toBe(400);
    expect((await call("POST", `/api/sessions/${WORKER}/mark`, { kind: "false_alarm", x: 1 })).status).toBe(
      400,
    );
    expect((await call("POST", "/api/sessions/ses_nobody/mark", { kind: "false_alarm" })).status).toBe(404);

    now = T0 + 1000;
    const r = await json("POST", `/api/sessions/${WORKER}/mark`, { kind: "false_alarm", by: "bob" });
    expect(r).toEqual({
      session_id: WORKER,
      root_id: ROOT,
      mark: { kind: "false_alarm", by: "bob", at: T0 + 1000, verdict: "looping", reason: "repeat_target" },
      lifted: [`tree ${ROOT}`, `session ${SIBLING}`],
      note: null,
    });
    expect(refused(WORKER)).toBe(false);
    expect(refused(SIBLING)).toBe(false);
    expect(refused(ROOT)).toBe(false);

    const rows = (await json("GET", "/api/sessions")).sessions;
    const worker = rows.find((s: { session_id: string }) => s.session_id === WORKER);
    expect(worker).toMatchObject({ refused: false, stage: "none", mark: { kind: "false_alarm", by: "bob" } });
    expect(rows.find((s: { session_id: string }) => s.session_id === QUIET).mark).toBeNull();

    const metrics = await (await app.request("/metrics")).text();
    expect(metrics).toMatch(/^stallguard_marks_total\{kind="false_alarm"\} 1$/m);
    expect(metrics).toMatch(/^stallguard_marked_sessions\{kind="false_alarm"\} 1$/m);
    expect(await json("GET", "/api/labels")).toEqual({
      [WORKER]: { label: "healthy", mark: "false_alarm", by: "bob", at: T0 + 1000, verdict: "looping" },
    });

    // A later mark replaces it; removing it leaves the lifted refusals lifted.
    const again = await json("POST", `/api/sessions/${WORKER}/mark`, { kind: "confirmed_loop" });
    expect(again.mark).toMatchObject({ kind: "confirmed_loop", by: "admin" });
    expect((await json("GET", "/api/labels"))[WORKER].label).toBe("loop");
    expect(await json("DELETE", `/api/sessions/${WORKER}/mark`)).toMatchObject({ mark: null });
    expect((await call("DELETE", `/api/sessions/${WORKER}/mark`)).status).toBe(404);
    expect(await json("GET", "/api/labels")).toEqual({});
    expect(refused(WORKER)).toBe(false);
  });

  it("a session id in the path obeys the wire's id pattern: 400 naming the charset, nothing marked", async () => {
    for (const bad of ["ses_%E2%80%AEgnp", "ses_%0Aforged", "ses%20x", `s${"x".repeat(200)}`]) {
      for (const [method, path] of [
        ["GET", `/api/sessions/${bad}`],
        ["POST", `/api/sessions/${bad}/mark`],
        ["DELETE", `/api/sessions/${bad}/mark`],
      ] as const) {
        const res = await call(method, path, method === "POST" ? { kind: "confirmed_loop" } : undefined);
        expect(res.status, `${method} ${path}`).toBe(400);
        expect(await res.text()).toContain("opencode's id charset");
      }
    }
    expect(await store.labels()).toEqual({});
  });

  it("a session never flagged takes either mark as a label; a false alarm there lifts nothing and says so", async () => {
    expect(refused(WORKER)).toBe(true);
    now = T0 + 1000;
    const healthy = await json("POST", `/api/sessions/${QUIET}/mark`, { kind: "false_alarm", by: "bob" });
    expect(healthy).toEqual({
      session_id: QUIET,
      root_id: QUIET,
      mark: { kind: "false_alarm", by: "bob", at: T0 + 1000, verdict: "ok", reason: null },
      lifted: [],
      note: "never flagged: nothing to lift; kept as a healthy run for calibrate",
    });
    // The other tree's hard stop is untouched.
    expect(refused(WORKER)).toBe(true);
    // A never-flagged sibling in the stopped tree: marking it lifts nothing either.
    const sibling = await json("POST", `/api/sessions/${SIBLING}/mark`, { kind: "false_alarm" });
    expect(sibling).toMatchObject({
      lifted: [],
      note: expect.stringMatching(/^never flagged: nothing to lift/),
    });
    expect(refused(WORKER)).toBe(true);
    const missed = await json("POST", `/api/sessions/${QUIET}/mark`, { kind: "confirmed_loop" });
    expect(missed).toMatchObject({
      lifted: [],
      note: expect.stringMatching(/^never flagged: kept as a loop/),
    });
    expect((await json("GET", "/api/labels"))[QUIET]).toMatchObject({ label: "loop", verdict: "ok" });
  });

  it("a confirmed loop is a label only: the hard stop stays", async () => {
    const r = await json("POST", `/api/sessions/${WORKER}/mark`, { kind: "confirmed_loop" });
    expect(r.lifted).toEqual([]);
    expect(refused(WORKER)).toBe(true);
    expect(await (await app.request("/metrics")).text()).toMatch(
      /^stallguard_marks_total\{kind="confirmed_loop"\} 1$/m,
    );
  });

  it("the detail answer: transitions with evidence, changed samples, requests, refusals, directives", async () => {
    expect((await call("GET", `/api/sessions/${WORKER}`, undefined, null)).status).toBe(401);
    expect((await call("GET", "/api/sessions/ses_nobody")).status).toBe(404);
    const d = await json("GET", `/api/sessions/${WORKER}`);
    expect(d.session).toMatchObject({ session_id: WORKER, root_id: ROOT, verdict: "looping", refused: true });
    expect(d.transitions).toHaveLength(1);
    expect(d.transitions[0]).toMatchObject({
      verdict: "looping",
      previous: "ok",
      signals: { fail_streak: 3, context_tokens: 5000 },
      evidence: { fail_target: "npm test", top_targets: [{ count: 14 }, { count: 3 }] },
    });
    expect(d.samples.map((s: { turns_since_landed: number }) => s.turns_since_landed)).toEqual([4, 6]);
    expect(d.requests.map((q: { at: number; cost_usd: number | null }) => [q.at, q.cost_usd])).toEqual([
      [T0 - 5000, null],
      [T0 - 4000, 0.5],
    ]);
    expect(
      d.refusals.map((r: { scope: string; key: string; state: string }) => `${r.scope}:${r.state}`),
    ).toEqual(["tree:stopped"]);
    expect(d.directives).toEqual([]);
    expect(d.thresholds.top_warn).toBe(configSchema.parse({}).thresholds.top_warn);
    expect(d.mark).toBeNull();
  });

  it("/health says how many plugins are live, whether the database takes writes, and the tick's servers", async () => {
    await json("POST", "/progress", {
      type: "watchdog_tick",
      at: T0,
      servers: 0,
      sessions: 0,
      flagged: 0,
      blind: true,
    });
    const h = await (await app.request("/health")).json();
    expect(h).toMatchObject({ ok: true, plugins_live: 1, db_writable: true });
    expect(h.watchdog).toMatchObject({ blind: true, servers: 0 });
    now = T0 + 3 * 60_000 + 1;
    expect((await (await app.request("/health")).json()).plugins_live).toBe(0);
  });
});
