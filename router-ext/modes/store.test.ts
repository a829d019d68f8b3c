// The modes' durable half through the real /progress app on a real SQLite
// file: scoped refusals, directive re-sends and acknowledgements, the stage
// and recovery count across a restart, per-session refusal counting and
// the context cap the gate reads.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Directive, Transition, WireSignals } from "../../shared/index.ts";
import { openTables } from "../db/open-tables.ts";
import { createApp } from "../server/app.ts";
import { LiveConfig } from "../server/live-config.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { parseTreeState } from "./actions.ts";
import { ModesStore } from "./store.ts";

const signals: WireSignals = {
  calls: 30,
  landed: 0,
  turns: 30,
  turns_since_landed: 30,
  calls_since_landed: 30,
  usd_since_landed: 0,
  usd_total: 0,
  dup_share: 0.9,
  ndup_share: 0.9,
  fail_streak: 0,
  context_tokens: 1000,
  max_context_tokens: 1000,
  novelty: 0,
  injected_since_landed: 0,
  flip_flops: 0,
  compactions: 0,
  read_only: false,
  last_landed_at: null,
};

const looping = (session: string, at: number, over: Partial<Transition> = {}): Transition => ({
  type: "transition",
  id: `p:${session}:${at}:ol`,
  source: "plugin",
  session_id: session,
  parent_id: session === "root" ? null : "root",
  root_id: "root",
  agent: "general",
  verdict: "looping",
  previous: "ok",
  reason: "repeat_target",
  signals,
  top_target: "read README.md",
  top_target_count: 20,
  report: "[stallguard] A sub-agent is looping.\nAvoid: re-reading whole files.",
  at,
  plugin_version: "0.1.0",
  ...over,
});

const heartbeat = (at: number, ids: string[]) => ({
  type: "heartbeat",
  instance_id: "inst_1",
  plugin_version: "0.1.0",
  at,
  sessions: ids.map((id) => ({
    session_id: id,
    parent_id: id === "root" ? null : "root",
    root_id: "root",
    agent: "general",
    verdict: "looping",
    turns: 30,
    turns_since_landed: 30,
    last_landed_at: null,
    context_tokens: 1000,
  })),
});

describe("modes store (real SQLite file, real /progress app)", () => {
  let dir: string;
  let store: SqliteStore;
  let clock = 1_000_000;
  const config = (mode: string) =>
    LiveConfig.create({
      fileLayers: [{ source: "test", value: { progress: { mode, max_recoveries: 2, context_cap: 4000 } } }],
      flags: {},
      overrides: [],
    });
  const appFor = (mode = "auto_recover") =>
    createApp({
      store,
      config: config(mode),
      adminToken: "admin",
      pluginToken: "tok",
      version: "test",
      now: () => clock,
    });
  const post = async (app: ReturnType<typeof createApp>, body: unknown) => {
    const res = await app.request("/progress", {
      method: "POST",
      headers: { authorization: "Bearer tok", "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as { accepted: number; duplicates: number; directives: Directive[] };
  };
  const reopen = async () => {
    await store.close();
    store = await openSqliteStore(join(dir, "s.db"));
  };
  /** The modes over the store's tables, outside any transaction. */
  const modes = () => new ModesStore(openTables(store.sql));
  const treeState = () =>
    parseTreeState(
      "root",
      (store.db.prepare("SELECT state FROM tree_modes WHERE root_id = 'root'").get() as { state: string })
        .state,
    );

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-modes-"));
    store = await openSqliteStore(join(dir, "s.db"));
    clock = 1_000_000;
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("stage 1: refuses the stuck session, lets its compaction through, re-sends the directive until acknowledged, across a restart", async () => {
    let app = appFor();
    const first = await post(app, looping("w", clock));
    expect(first.directives).toHaveLength(1);
    const d = first.directives[0] as Directive;
    expect(d).toMatchObject({ action: "recover", session_id: "w", root_id: "root" });
    expect(d.report).toContain("Avoid:");

    const id = { sessionId: "w", agent: "general", parent: "root", pluginVersion: "0.1.0" };
    expect(store.decide(id, clock)).toMatchObject({ refused: true, scope: "session", rootId: "root" });
    expect(store.decide({ ...id, agent: "compaction" }, clock).refused).toBe(false);
    expect(store.decide({ ...id, sessionId: "root", parent: null }, clock).refused).toBe(false);

    // Not acknowledged: not re-sent at once, re-sent on a later heartbeat answer.
    clock += 1000;
    expect((await post(app, heartbeat(clock, ["root", "w"]))).directives).toEqual([]);
    clock += 10_000;
    expect((await post(app, heartbeat(clock, ["root"]))).directives.map((x) => x.id)).toEqual([d.id]);

    // A restart keeps the refusal, the stage, the recovery count and the open directive.
    await reopen();
    app = appFor();
    expect(store.decide(id, clock).refused).toBe(true);
    expect(treeState()).toMatchObject({ stage: 1, recoveries: [1_000_000], refusedSessions: ["w"] });
    expect(
      (await store.sessions({ now: clock, liveWindowMs: 1e9 })).find((s) => s.session_id === "w")?.stage,
    ).toBe("recovering");
    clock += 10_000;
    expect((await post(app, heartbeat(clock, ["root"]))).directives.map((x) => x.id)).toEqual([d.id]);

    // The plugin reports the recovery done: the refusal is lifted, the directive is closed.
    const ack = await post(app, {
      type: "directive_result",
      directive_id: d.id,
      session_id: "w",
      root_id: "root",
      ok: true,
      error: null,
      at: clock,
    });
    expect(ack.accepted).toBe(1);
    expect(store.decide(id, clock).refused).toBe(false);
    expect(treeState()).toMatchObject({ stage: 1, recoveries: [1_000_000], refusedSessions: [] });
    clock += 10_000;
    expect((await post(app, heartbeat(clock, ["root", "w"]))).directives).toEqual([]);
    expect((await store.refusalLog(10)).map((r) => `${r.key} ${r.state} ${r.by}`)).toEqual([
      "w running stallguard",
      "w stopped stallguard",
    ]);
  });

  it("counts a refusal once per session, however often the client retries", async () => {
    const app = appFor();
    return post(app, looping("w", clock)).then(async () => {
      const id = { sessionId: "w", agent: "general", parent: "root", pluginVersion: null };
      for (let i = 0; i < 6; i++) expect(store.decide(id, clock + i).refused).toBe(true);
      const counters = (await store.metrics({ now: clock, liveWindowMs: 1 })).counters;
      expect(counters.refused_conversations_total).toBe(1);
      const row = store.db.prepare("SELECT requests FROM refused_sessions WHERE session_id = 'w'").get();
      expect(row).toEqual({ requests: 6 });
    });
  });

  it("stages 2 and 3: a second detection caps the tree's context, a third is the hard stop; Resume clears both", async () => {
    let app = appFor();
    const d1 = (await post(app, looping("w", clock))).directives[0] as Directive;
    await post(app, {
      type: "directive_result",
      directive_id: d1.id,
      session_id: "w",
      root_id: "root",
      ok: true,
      error: null,
      at: clock,
    });
    clock += 60_000;
    const second = await post(app, looping("w2", clock));
    expect(second.directives).toHaveLength(1);
    expect(await modes().capOf("root")).toBe(4000);
    expect(
      (await store.sessions({ now: clock, liveWindowMs: 1e9 })).find((s) => s.session_id === "w2")?.stage,
    ).toBe("limited");
    await reopen();
    app = appFor();
    expect(treeState()).toMatchObject({ stage: 2, capContext: true });
    expect(treeState().recoveries).toHaveLength(2);
    clock += 60_000;
    const third = await post(app, looping("w3", clock));
    expect(third.directives).toEqual([]);
    expect(treeState()).toMatchObject({ stage: 3, hardStop: true });
    expect(
      (await store.sessions({ now: clock, liveWindowMs: 1e9 })).find((s) => s.session_id === "w3")?.stage,
    ).toBe("stopped");

    await store.setRefusal("tree", "root", "running", "admin", clock, "admin Resume");
    expect(await modes().capOf("root")).toBeNull();
    expect(
      store.decide({ sessionId: "w2", agent: "general", parent: "root", pluginVersion: null }, clock).refused,
    ).toBe(false);
  });

  it("a session that goes ok gets its mode refusal lifted; an admin's refusal stays", async () => {
    const app = appFor();
    await post(app, looping("w", clock));
    await store.setRefusal("session", "other", "stopped", "admin", clock, "admin Stop");
    await post(
      app,
      looping("w", clock + 1, { id: "p:w:ok:1", verdict: "ok", previous: "looping", reason: null }),
    );
    expect(
      store.decide({ sessionId: "w", agent: null, parent: "root", pluginVersion: null }, clock).refused,
    ).toBe(false);
    expect(await modes().liftSession("other", "session ok", clock)).toBe(false);
  });

  it("auto_compact hands out a compact directive and refuses nothing", async () => {
    const app = appFor("auto_compact");
    const r = await post(app, looping("root", clock));
    expect(r.directives).toEqual([expect.objectContaining({ action: "compact", session_id: "root" })]);
    expect(
      store.decide({ sessionId: "root", agent: "build", parent: null, pluginVersion: null }, clock).refused,
    ).toBe(false);
  });

  it("the context cap: over-cap once measured, never for the compaction itself, reset by a compaction", async () => {
    const app = appFor("auto_limit_context");
    await post(app, looping("root", clock));
    expect(await modes().capOf("root")).toBe(4000);
    const id = { sessionId: "root", agent: "build", parent: null, pluginVersion: null };
    const req = (agent: string, tokens: number, at: number) =>
      store.recordRequest({
        session_id: "root",
        root_id: "root",
        agent,
        parent: null,
        model: "m",
        status: 200,
        prompt_tokens: tokens,
        completion_tokens: 1,
        cached_tokens: 0,
        cost_usd: null,
        context_tokens: tokens,
        started_at: at,
        duration_ms: 1,
        refused: false,
        plugin_version: null,
        client: "default",
        error: null,
        response_bytes: 10,
      });
    req("build", 3000, clock + 1);
    expect(store.decide(id, clock).overCap).toBeUndefined();
    req("build", 5000, clock + 2);
    expect(store.decide(id, clock).overCap).toEqual({ cap: 4000, tokens: 5000 });
    expect(store.decide({ ...id, agent: "compaction" }, clock).overCap).toBeUndefined();
    req("compaction", 6000, clock + 3);
    expect(store.decide(id, clock).overCap).toBeUndefined();
    req("build", 800, clock + 4);
    expect(store.decide(id, clock).overCap).toBeUndefined();
  });
});
