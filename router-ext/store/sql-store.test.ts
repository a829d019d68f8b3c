import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Heartbeat, Transition } from "../../shared/index.ts";
import { heartbeatSession, quietSignals } from "../../test/helpers/wire-fixtures.ts";
import { progressOpts } from "../breaker/testing.ts";
import { MIGRATIONS, migrate } from "../db/migrations.ts";
import type { ProgressOptions } from "../db/store-progress.ts";
import { headersOnly } from "../db/tables/plugin-links.ts";
import type { RequestRecord } from "../gate/types.ts";
import type { Sql, SqlParams } from "./sql.ts";
import { SqlStore } from "./sql-store.ts";
import { openSqliteStore, type SqliteStore } from "./sqlite-store.ts";

const signals = quietSignals;

function transition(over: Partial<Transition> = {}): Transition {
  return {
    type: "transition",
    id: `p:ses_a:${over.at ?? 1000}:os`,
    source: "plugin",
    session_id: "ses_a",
    parent_id: null,
    root_id: "ses_a",
    agent: "build",
    verdict: "stalling",
    previous: "ok",
    reason: "duplicates",
    signals: signals(),
    top_target: "read src/a.ts",
    top_target_count: 7,
    report: "[stallguard] report",
    at: 1000,
    plugin_version: "0.1.0",
    ...over,
  };
}

const opts = (now = 5000): ProgressOptions => progressOpts(now);

const request = (over: Partial<RequestRecord> = {}): RequestRecord => ({
  session_id: "ses_a",
  root_id: "ses_a",
  agent: "build",
  parent: null,
  model: "m",
  status: 200,
  prompt_tokens: 100,
  completion_tokens: 10,
  cached_tokens: 0,
  cost_usd: 0.25,
  context_tokens: 100,
  started_at: 2000,
  duration_ms: 30,
  refused: false,
  plugin_version: null,
  client: "default",
  error: null,
  response_bytes: 10,
  ...over,
});

describe("SqlStore on SQLite", () => {
  let dir: string;
  let store: SqliteStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-store-"));
    store = await openSqliteStore(join(dir, "s.db"));
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("opens in WAL mode with the migrations applied once", async () => {
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(await store.schemaVersion()).toBe(Math.max(...MIGRATIONS.map((m) => m.version)));
    expect(migrate(store.db)).toEqual([]);
  });

  it("counts a retried transition once", async () => {
    const t = transition();
    expect(await store.storeProgress([t], opts())).toMatchObject({ accepted: 1, duplicates: 0 });
    expect(await store.storeProgress([t, t], opts())).toMatchObject({ accepted: 0, duplicates: 2 });
    const [s] = await store.sessions({ now: 5000, liveWindowMs: 180_000 });
    expect(s).toMatchObject({ verdict: "stalling", worst: "stalling", flags: 1, stage: "warned" });
    expect(await store.events(10)).toHaveLength(1);
    expect((await store.metrics({ now: 5000, liveWindowMs: 1 })).counters["warnings_total:stalling"]).toBe(1);
  });

  it("keeps worst and flags after the flag clears", async () => {
    await store.storeProgress([transition({ id: "p:ses_a:1000:ol", verdict: "looping", at: 1000 })], opts());
    await store.storeProgress(
      [transition({ id: "p:ses_a:2000:lo", verdict: "ok", previous: "looping", reason: null, at: 2000 })],
      opts(),
    );
    await store.storeProgress([transition({ id: "p:ses_a:3000:os", verdict: "stalling", at: 3000 })], opts());
    await store.storeProgress(
      [transition({ id: "p:ses_a:4000:so", verdict: "ok", previous: "stalling", reason: null, at: 4000 })],
      opts(),
    );
    const [s] = await store.sessions({ now: 5000, liveWindowMs: 180_000 });
    expect(s).toMatchObject({ verdict: "ok", worst: "looping", flags: 2, stage: "none" });
  });

  it("does not let a late, older transition overwrite a newer verdict", async () => {
    await store.storeProgress(
      [transition({ id: "p:ses_a:2000:so", verdict: "ok", previous: "stalling", at: 2000 })],
      opts(),
    );
    await store.storeProgress([transition({ id: "p:ses_a:1000:os", verdict: "stalling", at: 1000 })], opts());
    const [s] = await store.sessions({ now: 5000, liveWindowMs: 180_000 });
    expect(s).toMatchObject({ verdict: "ok", worst: "stalling", flags: 1 });
  });

  it("rolls the whole body back when one message fails", async () => {
    const bad = transition({ id: "p:ses_b:1:os", session_id: "ses_b" });
    // A NOT NULL violation inside the transaction (the schema forbids null root ids).
    const broken = { ...bad, root_id: null } as unknown as Transition;
    await expect(store.storeProgress([transition(), broken], opts())).rejects.toThrow();
    expect(await store.sessions({ now: 5000, liveWindowMs: 1 })).toHaveLength(0);
    expect(await store.events(10)).toHaveLength(0);
  });

  it("marks plugins live from heartbeats and takes their session numbers", async () => {
    const hb: Heartbeat = {
      type: "heartbeat",
      instance_id: "inst-1",
      plugin_version: "0.1.0",
      at: 4000,
      sessions: [
        {
          session_id: "ses_h",
          parent_id: null,
          root_id: "ses_h",
          agent: "build",
          verdict: "ok",
          turns: 9,
          turns_since_landed: 3,
          last_landed_at: 3500,
          context_tokens: 4242,
        },
      ],
    };
    await store.storeProgress([hb], opts(5000));
    const [s] = await store.sessions({ now: 6000, liveWindowMs: 180_000 });
    expect(s).toMatchObject({
      session_id: "ses_h",
      plugin_live: true,
      plugin_version: "0.1.0",
      turns_since_landed: 3,
      context_tokens: 4242,
      source: "plugin",
    });
    expect((await store.sessions({ now: 5000 + 180_001, liveWindowMs: 180_000 }))[0]?.plugin_live).toBe(
      false,
    );
    expect((await store.metrics({ now: 6000, liveWindowMs: 180_000 })).livePlugins).toBe(1);
  });

  it("tells headers seen from reporting: the gate's plugin headers are not a report", async () => {
    const link = { instanceId: "inst-2", reportTo: "http://127.0.0.1:4870", state: "failing" as const };
    store.decide({ sessionId: "ses_g", agent: "build", parent: null, pluginVersion: "0.1.0", link }, 1000);
    const view = async () => (await store.sessions({ now: 2000, liveWindowMs: 180_000 }))[0];
    expect(await view()).toMatchObject({
      session_id: "ses_g",
      plugin_live: false,
      plugin_headers: true,
      source: "gate",
    });
    const silent = async (now: number) => {
      // The gate's links are written in its next batch (the store writes it first, as /health asks).
      return headersOnly(await store.pluginLinks(now - 180_000), {
        now,
        liveWindowMs: 180_000,
        heartbeatMs: 60_000,
      });
    };
    // It says its deliveries fail: named at once, with the URL it reports to.
    expect(await silent(2000)).toEqual([
      {
        instance_id: "inst-2",
        version: "0.1.0",
        report_url: "http://127.0.0.1:4870",
        report_state: "failing",
        last_headers_at: 1000,
      },
    ]);
    // Its heartbeat arrives: it reports, and the session is live.
    const hb: Heartbeat = {
      type: "heartbeat",
      instance_id: "inst-2",
      plugin_version: "0.1.0",
      at: 2500,
      sessions: [],
    };
    await store.storeProgress([hb], opts(3000));
    expect(await silent(3000)).toEqual([]);
    // A plugin that never says it fails, and never heartbeats: named after one heartbeat period.
    const quiet = { instanceId: "inst-3", reportTo: "http://127.0.0.1:9", state: "pending" as const };
    store.decide(
      { sessionId: "ses_q", agent: "build", parent: null, pluginVersion: "0.1.0", link: quiet },
      4000,
    );
    expect((await silent(30_000)).map((p) => p.instance_id)).toEqual([]);
    expect((await silent(70_000)).map((p) => p.instance_id)).toEqual(["inst-3"]);
  });

  it("a heartbeat after a transition brings the figures up to date; nothing heard for the window: ended", async () => {
    await store.storeProgress(
      [transition({ top_target: "read src/a.ts", top_target_count: 14, at: 1000 })],
      opts(1000),
    );
    const beat = (at: number, over: Partial<Heartbeat["sessions"][number]>): Heartbeat => ({
      type: "heartbeat",
      instance_id: "inst-1",
      plugin_version: "0.1.0",
      at,
      sessions: [heartbeatSession("ses_a", { verdict: "stalling", ...over })],
    });
    // An older plugin's heartbeat: the transition's top target stays.
    await store.storeProgress([beat(2000, { turns_since_landed: 4 })], opts(2000));
    expect((await store.sessions({ now: 2000, liveWindowMs: 180_000 }))[0]).toMatchObject({
      top_target: "read src/a.ts",
      top_target_count: 14,
      calls: signals().calls,
      title: null,
    });
    await store.storeProgress(
      [
        beat(3000, {
          calls: 52,
          landed: 1,
          usd_since_landed: 0.5,
          last_landed_at: 2500,
          top_target: "read src/a.ts",
          top_target_count: 30,
          title: "fix the parser",
          directory: "~/proj",
          created_at: 900,
        }),
      ],
      opts(3000),
    );
    // A late heartbeat from before changes nothing; one without a title keeps it.
    await store.storeProgress([beat(2500, { top_target_count: 20, calls: 45 })], opts(3100));
    const [s] = await store.sessions({ now: 3100, liveWindowMs: 180_000 });
    expect(s).toMatchObject({
      top_target_count: 30,
      calls: 52,
      landed: 1,
      last_landed_at: 2500,
      usd_since_landed: 0.5,
      title: "fix the parser",
      directory: "~/proj",
      created_at: 900,
      ended: false,
    });
    expect((await store.sessions({ now: 3100 + 180_000, liveWindowMs: 180_000 }))[0]?.ended).toBe(false);
    expect((await store.sessions({ now: 3100 + 180_001, liveWindowMs: 180_000 }))[0]).toMatchObject({
      ended: true,
      plugin_live: false,
    });
  });

  it("learns trees from the gate, bottom-up included, and refuses a stopped tree", async () => {
    // The child is seen first with its parent; the parent later learns its own parent.
    expect(
      store.decide({ sessionId: "child", agent: "general", parent: "mid", pluginVersion: null }, 1000),
    ).toEqual({ refused: false, scope: null, reason: null, rootId: "mid" });
    store.decide({ sessionId: "mid", agent: "build", parent: "top", pluginVersion: null }, 1001);
    const child = (await store.sessions({ now: 2000, liveWindowMs: 1 })).find(
      (s) => s.session_id === "child",
    );
    expect(child).toMatchObject({ root_id: "top", parent_id: "mid", source: "gate" });

    await store.setRefusal("tree", "top", "stopped", "alice", 1500, "admin Stop");
    const d = store.decide({ sessionId: "child", agent: null, parent: null, pluginVersion: null }, 1600);
    expect(d).toMatchObject({ refused: true, scope: "tree", rootId: "top" });
    expect(d.reason).toContain("alice");
    const row = (await store.sessions({ now: 2000, liveWindowMs: 1 })).find((s) => s.session_id === "child");
    expect(row).toMatchObject({ refused: true, stopped_by: "alice", stopped_at: 1500 });

    await store.setRefusal("tree", "top", "running", "bob", 1700, "admin Resume");
    expect(store.decide({ sessionId: "child", agent: null, parent: null, pluginVersion: null }).refused).toBe(
      false,
    );
    expect((await store.refusalLog(10)).map((r) => [r.state, r.by])).toEqual([
      ["running", "bob"],
      ["stopped", "alice"],
    ]);
  });

  it("uses the gate's request records for spend since the last landed change", async () => {
    await store.storeProgress(
      [transition({ signals: signals({ last_landed_at: 1500, usd_since_landed: 9 }) })],
      opts(),
    );
    store.recordRequest(request({ started_at: 1000, cost_usd: 5 })); // before landed: not counted
    store.recordRequest(request({ started_at: 2000, cost_usd: 0.25 }));
    store.recordRequest(request({ started_at: 2500, cost_usd: 0.5, context_tokens: 777 }));
    store.recordRequest(request({ started_at: 2600, cost_usd: null, refused: true, status: 429 }));
    const [s] = await store.sessions({ now: 5000, liveWindowMs: 1 });
    expect(s).toMatchObject({
      turns_since_landed: 2,
      usd_since_landed: 0.75,
      context_tokens: 777,
      spend_source: "gate",
    });
    expect((await store.metrics({ now: 5000, liveWindowMs: 1 })).counters.refusals_total).toBe(1);
  });

  it("prunes by retention but keeps stopped trees", async () => {
    await store.storeProgress(
      [transition({ session_id: "old", root_id: "old", id: "p:old:1:os" })],
      opts(1000),
    );
    await store.storeProgress(
      [transition({ session_id: "kept", root_id: "kept", id: "p:kept:1:os" })],
      opts(1000),
    );
    await store.setRefusal("tree", "kept", "stopped", "admin", 1000, null);
    store.recordRequest(request({ started_at: 1000 }));
    const r = await store.prune(1_000_000, 10_000);
    expect(r).toMatchObject({ transitions: 2, requests: 1, sessions: 1 });
    expect((await store.sessions({ now: 1_000_000, liveWindowMs: 1 })).map((s) => s.session_id)).toEqual([
      "kept",
    ]);
    expect((await store.refusal("tree", "kept"))?.state).toBe("stopped");
  });

  it("prunes a long request history in chunks: other work runs between them, every old request goes, the new stay", async () => {
    for (let i = 0; i < 12_000; i++) store.recordRequest(request({ started_at: 1000 + i }));
    for (let i = 0; i < 300; i++) store.recordRequest(request({ started_at: 990_000 + i }));
    await store.flush();
    let turns = 0;
    let pruning = true;
    const spin = () => {
      turns++;
      if (pruning) setImmediate(spin);
    };
    setImmediate(spin);
    const r = await store.prune(1_000_000, 10_000);
    pruning = false;
    expect(r.requests).toBe(12_000);
    // 12,000 requests are three chunks (5,000 each): the event loop turned between them.
    expect(turns).toBeGreaterThanOrEqual(2);
    const left = await store.sql.all<{ n: number; first: number }>(
      "SELECT COUNT(*) AS n, MIN(started_at) AS first FROM requests",
    );
    expect(left).toEqual([{ n: 300, first: 990_000 }]);
  });

  it("persists knob overrides as JSON", async () => {
    await store.setKnobOverride("thresholds.dup_warn", 0.5, "admin", 1);
    await store.setKnobOverride("progress.read_only_agents", ["explore"], "admin", 2);
    expect((await store.knobOverrides()).map((k) => [k.path, k.value])).toEqual([
      ["progress.read_only_agents", ["explore"]],
      ["thresholds.dup_warn", 0.5],
    ]);
    expect(await store.deleteKnobOverride("thresholds.dup_warn")).toBe(true);
    expect(await store.knobOverrides()).toHaveLength(1);
  });

  it("claims an alert once and counts the won claim in the same commit", async () => {
    const alerts = async () => (await store.metrics({ now: 5000, liveWindowMs: 1 })).counters.alerts_total;
    expect(await store.claimAlert("no-progress|trigger|1000|ses_a", 5000)).toBe(true);
    expect(await store.claimAlert("no-progress|trigger|1000|ses_a", 5001)).toBe(false);
    expect(await alerts()).toBe(1);
    expect(await store.claimAlert("no-progress|resolve|2000|ses_a", 5002)).toBe(true);
    expect(await alerts()).toBe(2);
  });

  it("refuses a database from a newer stallguard", async () => {
    store.db
      .prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)")
      .run();
    expect(() => migrate(store.db)).toThrow(/newer/);
  });
});

describe("reloading the facts (a replica hearing another's change)", () => {
  it("never loses a refusal this store committed while the snapshot was being read", async () => {
    const base = await openSqliteStore(":memory:");
    // Reads answer with what they found, then wait while `hold` is set: the
    // snapshot is taken before the refusal below commits, and lands after it.
    let hold: Promise<void> | null = null;
    const slow: Sql = {
      engine: base.sql.engine,
      all: async <T>(q: string, p?: SqlParams) => {
        const rows = await base.sql.all<T>(q, p);
        if (hold) await hold;
        return rows;
      },
      get: (q, p) => base.sql.get(q, p),
      run: (q, p) => base.sql.run(q, p),
      tx: (fn) => base.sql.tx(fn),
    };
    const store = await SqlStore.open(slow);
    const who = { sessionId: "ses_x", agent: null, parent: null, pluginVersion: null };
    let release: () => void = () => {};
    hold = new Promise<void>((r) => {
      release = r;
    });
    const reload = store.reloadFacts();
    await new Promise((r) => setTimeout(r, 10));
    hold = null;
    await store.setRefusal("session", "ses_x", "stopped", "alice", 1, null);
    expect(store.peek(who).refused).toBe(true);
    release();
    await reload;
    expect(store.peek(who).refused).toBe(true);
    await base.close();
  });
});
