// The breaker on a database that refuses writes (SQLite's query_only: the real
// engine answers SQLITE_READONLY), and two services on one database as two
// replicas would be: reload() carries one's change to the other.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import type { BreakerConfig } from "./service.ts";
import { BreakerStore } from "./store.ts";
import { breakerOn, served, stallTransition, storeTransition } from "./testing.ts";

const T0 = 1_800_000_000_000;

describe("breaker writes off the gate's path", () => {
  let store: SqliteStore;
  let cfg: BreakerConfig;
  let logs: string[];
  const now = T0 + 20_000;

  const service = () => breakerOn(store, { config: () => cfg, log: (l) => logs.push(l), now: () => now });

  beforeEach(async () => {
    store = await openSqliteStore(":memory:");
    cfg = configSchema.parse({ breaker: { fallbacks: { "bad/": "fallback/m" } } }).breaker;
    logs = [];
    for (let i = 0; i < 4; i++) {
      store.recordRequest(served("bad/m", `ses_b${i}`, T0 + i * 1000));
      store.recordRequest(served("good/m", `ses_g${i}`, T0 + i * 1000 + 500));
    }
    for (let i = 0; i < 3; i++) await storeTransition(store, stallTransition(`ses_b${i}`, T0 + 10_000 + i));
  });
  afterEach(async () => await store.close());

  it("a refused write trips in memory, is counted and logged once, and is stored on the retry", async () => {
    const svc = await service();
    store.db.pragma("query_only = ON");
    const trips = await svc.evaluate();
    expect(trips).toMatchObject([{ model: "bad/m", seq: 0 }]);
    // The gate still routes from memory.
    expect(svc.route("bad/m")?.model).toBe("fallback/m");
    await svc.resume("bad/m", "alice");
    await svc.resume("bad/m", "bob");
    expect(svc.route("bad/m")).toBeNull();
    expect(svc.metrics()).toContain("stallguard_breaker_write_failures_total 3");
    expect(logs.filter((l) => l.includes("not stored"))).toHaveLength(1);
    expect(await new BreakerStore(store.sql).states()).toEqual([]);
    // A reload keeps what could not be stored yet.
    await svc.reload();
    expect((await svc.view()).models.find((m) => m.model === "bad/m")?.resumed_by).toBe("bob");

    store.db.pragma("query_only = OFF");
    await svc.evaluate();
    const bs = new BreakerStore(store.sql);
    expect((await bs.states()).map((s) => `${s.model}:${s.phase}:${s.resumedBy}`)).toEqual([
      "bad/m:closed:bob",
    ]);
    expect(logs.some((l) => l.includes("writes work again"))).toBe(true);
    // The lost trip row is counted, not invented.
    expect(await bs.trips()).toEqual([]);
  });

  it("reload() carries a trip and a Resume made by another service on the same database", async () => {
    const a = await service();
    const b = await service();
    expect(await a.evaluate()).toHaveLength(1);
    expect(b.route("bad/m")).toBeNull();
    await b.reload();
    expect(b.route("bad/m")?.model).toBe("fallback/m");
    await b.resume("bad/m", "carol");
    expect(a.route("bad/m")?.model).toBe("fallback/m");
    await a.reload();
    expect(a.route("bad/m")).toBeNull();
  });

  it("evaluations run one at a time: two at once trip a model once", async () => {
    const svc = await service();
    const [x, y] = await Promise.all([svc.evaluate(), svc.evaluate()]);
    expect([...x, ...y].map((t) => t.model)).toEqual(["bad/m"]);
    expect(await new BreakerStore(store.sql).trips()).toHaveLength(1);
  });
});
