import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { configSchema } from "../../shared/index.ts";
import type { Alert } from "../notify/types.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { type BreakerConfig, BreakerService } from "./service.ts";
import { BreakerStore } from "./store.ts";
import { breakerOn, served, stallTransition, storeTransition } from "./testing.ts";

const MIN = 60_000;
const T0 = 1_800_000_000_000;

describe("BreakerService", () => {
  let dir: string;
  let store: SqliteStore;
  let cfg: BreakerConfig;
  let alerts: Alert[];
  let now: number;
  const service = () =>
    breakerOn(store, { config: () => cfg, notify: (a) => alerts.push(a), now: () => now });

  /** Four trees per model in the window; the first three on `bad` loop. */
  async function replay(bad = "bad/m", good = "good/m"): Promise<void> {
    for (let i = 0; i < 4; i++) {
      store.recordRequest(served(bad, `ses_b${i}`, T0 + i * 1000));
      store.recordRequest(served(good, `ses_g${i}`, T0 + i * 1000 + 500));
    }
    for (let i = 0; i < 3; i++) await storeTransition(store, stallTransition(`ses_b${i}`, T0 + 10_000 + i));
  }

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-breaker-"));
    store = await openSqliteStore(join(dir, "s.db"));
    cfg = configSchema.parse({ breaker: { fallbacks: { "bad/": "fallback/m" } } }).breaker;
    alerts = [];
    now = T0 + 20_000;
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("the view waits for an evaluation a verdict started, whose reads run elsewhere and take time", async () => {
    await replay();
    // Evidence reads that answer later, as serve's writer thread does.
    const later = <T>(p: Promise<T>) => new Promise<T>((r) => setTimeout(() => r(p), 20));
    const reads = {
      ...store.sql,
      engine: store.sql.engine,
      all: <T>(q: string, p?: never) => later(store.sql.all<T>(q, p)),
      get: <T>(q: string, p?: never) => later(store.sql.get<T>(q, p)),
    } as typeof store.sql;
    const svc = new BreakerService({
      store: new BreakerStore(store.sql, undefined, reads),
      config: () => cfg,
      notify: (a) => alerts.push(a),
      now: () => now,
    });
    await svc.reload();
    // The /progress route starts the evaluation and answers without waiting for it.
    void svc.onVerdicts(["looping"]);
    const view = await svc.view();
    expect(view.models.find((m) => m.model === "bad/m")).toMatchObject({ phase: "open", trips: 1 });
    expect(view.trips).toHaveLength(1);
  });

  it("trips exactly the model whose trees stall, with evidence and a critical alert", async () => {
    await replay();
    const svc = await service();
    const trips = await svc.evaluate();
    expect(trips.map((t) => t.model)).toEqual(["bad/m"]);
    const t = trips[0];
    expect(t).toMatchObject({
      served_trees: 4,
      stalled_trees: 3,
      rate: 0.75,
      others_served: 4,
      others_stalled: 0,
      fallback: "fallback/m",
      window_ms: 60 * MIN,
      min_sessions: 3,
    });
    expect(t?.evidence.map((e) => e.session_id)).toEqual(["ses_b0", "ses_b1", "ses_b2"]);
    expect(alerts).toHaveLength(1);
    expect(alerts[0]).toMatchObject({ severity: "critical", state: "trigger", source: "breaker" });
    expect(svc.route("bad/m")).toEqual({ model: "fallback/m", header: "bad/m -> fallback/m" });
    expect(svc.route("good/m")).toBeNull();
    // A second evaluation while open records nothing new.
    expect(await svc.evaluate()).toEqual([]);
    expect(await new BreakerStore(store.sql).trips()).toHaveLength(1);
  });

  it("does not trip on one hard task: several stuck sessions in one tree", async () => {
    for (let i = 0; i < 4; i++) {
      store.recordRequest(served("bad/m", `ses_w${i}`, T0 + i, "ses_root"));
      store.recordRequest(served("good/m", `ses_g${i}`, T0 + i));
    }
    for (let i = 1; i < 4; i++) store.recordRequest(served("bad/m", `ses_r${i}`, T0 + i));
    for (let i = 0; i < 4; i++)
      await storeTransition(
        store,
        stallTransition(`ses_w${i}`, T0 + 10_000 + i, { root_id: "ses_root", parent_id: "ses_root" }),
      );
    const svc = await service();
    expect(await svc.evaluate()).toEqual([]);
    const bad = (await svc.view()).models.find((m) => m.model === "bad/m");
    expect(bad).toMatchObject({ phase: "closed", stalled_trees: 1 });
  });

  it("is advisory without a fallback: alert and record, traffic untouched", async () => {
    cfg = { ...cfg, fallbacks: {} };
    await replay();
    const svc = await service();
    expect((await svc.evaluate())[0]).toMatchObject({ model: "bad/m", fallback: null });
    expect(alerts[0]?.summary).toContain("advisory");
    expect(svc.route("bad/m")).toBeNull();
    expect((await svc.view()).models.find((m) => m.model === "bad/m")?.phase).toBe("open");
  });

  it("half-opens after the cooldown, closes after a quiet probe, and backs off on a re-trip", async () => {
    await replay();
    const svc = await service();
    await svc.evaluate();
    now += 15 * MIN;
    await svc.tick();
    expect((await svc.view()).models.find((m) => m.model === "bad/m")?.phase).toBe("half_open");
    expect(svc.route("bad/m")).toBeNull();
    // Old evidence alone does not re-trip a probing model.
    expect(await svc.evaluate()).toEqual([]);
    // A stall during the probe does, with a doubled cooldown.
    store.recordRequest(served("bad/m", "ses_b3", now - 100));
    await storeTransition(store, stallTransition("ses_b3", now));
    now += 1;
    const again = await svc.evaluate();
    expect(again).toHaveLength(1);
    expect(again[0]).toMatchObject({ previous: "half_open", trips: 2, cooldown_ms: 30 * MIN });
    now += 30 * MIN;
    await svc.tick();
    now += 30 * MIN;
    await svc.tick();
    expect((await svc.view()).models.find((m) => m.model === "bad/m")).toMatchObject({
      phase: "closed",
      trips: 0,
    });
    expect(alerts.map((a) => a.state)).toEqual(["trigger", "trigger", "resolve"]);
  });

  it("Resume closes at once; old evidence cannot re-trip; state survives a restart", async () => {
    await replay();
    let svc = await service();
    await svc.evaluate();
    // Restart: a new service on a new handle to the same file sees the open breaker.
    await store.close();
    store = await openSqliteStore(join(dir, "s.db"));
    svc = await service();
    expect(svc.route("bad/m")?.model).toBe("fallback/m");
    expect(svc.metrics()).toContain('stallguard_breaker_state{model="bad/m"} 2');
    await svc.resume("bad/m", "alice");
    expect(svc.route("bad/m")).toBeNull();
    await storeTransition(
      store,
      stallTransition("ses_b0", now + 5, { verdict: "stalling", id: "p:ses_b0:again:1" }),
    );
    now += 10;
    expect(await svc.evaluate()).toEqual([]);
    await store.close();
    store = await openSqliteStore(join(dir, "s.db"));
    const view = await (await service()).view();
    expect(view.models.find((m) => m.model === "bad/m")).toMatchObject({
      phase: "closed",
      resumed_by: "alice",
    });
    expect(view.trips).toHaveLength(1);
    expect(
      (await new BreakerStore(store.sql).changes()).map((c) => `${c.from_phase}>${c.to_phase}:${c.by}`),
    ).toEqual(["open>closed:alice", "closed>open:breaker"]);
  });

  it("only counts requests inside each session's stall window (since its last landed change)", async () => {
    // bad/m served these sessions only before they landed; they then stalled on good/m.
    for (let i = 0; i < 4; i++) {
      store.recordRequest(served("bad/m", `ses_s${i}`, T0 + i));
      store.recordRequest(served("good/m", `ses_s${i}`, T0 + 5000 + i));
      store.recordRequest(served("other/m", `ses_o${i}`, T0 + i));
    }
    for (let i = 0; i < 3; i++)
      await storeTransition(
        store,
        stallTransition(`ses_s${i}`, T0 + 10_000 + i, { signals: signalsLanded(T0 + 2000) }),
      );
    const trips = await (await service()).evaluate();
    expect(trips.map((t) => t.model)).toEqual(["good/m"]);
  });

  it("retention prunes old trips and phase changes, never the current state", async () => {
    await replay();
    const svc = await service();
    expect(await svc.evaluate()).toHaveLength(1);
    const bs = new BreakerStore(store.sql);
    expect(await bs.prune(now - 60 * MIN)).toEqual({ trips: 0, changes: 0 });
    expect(await bs.prune(now + 1)).toMatchObject({ trips: 1 });
    expect(await bs.trips()).toEqual([]);
    expect(await bs.changes()).toEqual([]);
    expect(svc.route("bad/m")).toEqual({ model: "fallback/m", header: "bad/m -> fallback/m" });
  });

  it("reads the window's requests only once enough trees stalled for a trip", async () => {
    // Every request of the last hour, every ten seconds: a busy router's event loop pays for each row.
    for (let i = 0; i < 4; i++) {
      store.recordRequest(served("bad/m", `ses_b${i}`, T0 + i * 1000));
      store.recordRequest(served("good/m", `ses_g${i}`, T0 + i * 1000 + 500));
    }
    const bs = new BreakerStore(store.sql);
    const reads = vi.spyOn(bs, "served");
    const svc = new BreakerService({
      store: bs,
      config: () => cfg,
      notify: (a) => alerts.push(a),
      now: () => now,
    });
    await svc.reload();
    expect(await svc.evaluate()).toEqual([]);
    for (let i = 0; i < 2; i++) await storeTransition(store, stallTransition(`ses_b${i}`, T0 + 10_000 + i));
    expect(await svc.evaluate()).toEqual([]);
    expect(reads).not.toHaveBeenCalled();
    await storeTransition(store, stallTransition("ses_b2", T0 + 10_002));
    expect((await svc.evaluate()).map((t) => t.model)).toEqual(["bad/m"]);
    expect(reads).toHaveBeenCalledTimes(1);
  });

  it("does nothing when disabled", async () => {
    cfg = { ...cfg, enabled: false };
    await replay();
    expect(await (await service()).evaluate()).toEqual([]);
  });
});

function signalsLanded(at: number) {
  return { ...stallTransition("x", 0).signals, last_landed_at: at };
}
