// The behaviour breaker on two replicas of one real PostgreSQL
// (test/helpers/postgres.ts): its portable SQL runs there (evidence reads,
// state, trips, phase log), and a trip or a Resume made by one replica reaches
// the other's gate through LISTEN/NOTIFY, as serve wires it (start.ts).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BreakerConfig, BreakerService } from "../../router-ext/breaker/service.ts";
import { BreakerStore } from "../../router-ext/breaker/store.ts";
import { served, stallTransition, storeTransition } from "../../router-ext/breaker/testing.ts";
import { openPgStore, type PgStore } from "../../router-ext/store/pg-store.ts";
import { configSchema } from "../../shared/index.ts";
import { type PgServer, pgBin, pgTitle, startPostgres } from "../helpers/postgres.ts";

const T0 = 1_800_000_000_000;

/** Polls until `ok` holds (a replica hears a change asynchronously); false after 5 s. */
async function eventually(ok: () => boolean): Promise<boolean> {
  for (let i = 0; i < 100; i++) {
    if (ok()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return ok();
}

describe.skipIf(!pgBin)(pgTitle("breaker on two PostgreSQL replicas (real PostgreSQL)"), () => {
  let server: PgServer;
  const stores: PgStore[] = [];
  const cfg: BreakerConfig = configSchema.parse({ breaker: { fallbacks: { "bad/": "fallback/m" } } }).breaker;
  const now = T0 + 20_000;

  const replica = async (url: string, name: string) => {
    const store = await openPgStore(
      url,
      { STALLGUARD_PG_PASSWORD: server.password },
      {
        log: () => {},
        now: () => now,
        replica: name,
      },
    );
    stores.push(store);
    const breaker = new BreakerService({
      store: new BreakerStore(store.sql, store.tellBreakerChanged),
      config: () => cfg,
      now: () => now,
    });
    await breaker.reload();
    store.onBreakerChanged(() => void breaker.reload());
    return { store, breaker };
  };

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await Promise.all(stores.map((s) => s.close().catch(() => {})));
    await server?.stop();
  });

  it("a trip through A routes B's requests to the fallback; a Resume through A closes it on B", async () => {
    const url = await server.createDatabase("breaker");
    const a = await replica(url, "a");
    const b = await replica(url, "b");
    for (let i = 0; i < 4; i++) {
      a.store.recordRequest(served("bad/m", `ses_b${i}`, T0 + i * 1000));
      a.store.recordRequest(served("good/m", `ses_g${i}`, T0 + i * 1000 + 500));
    }
    await a.store.flush();
    for (let i = 0; i < 3; i++) await storeTransition(a.store, stallTransition(`ses_b${i}`, T0 + 10_000 + i));

    expect(b.breaker.route("bad/m")).toBeNull();
    expect((await a.breaker.evaluate()).map((t) => t.model)).toEqual(["bad/m"]);
    expect(a.breaker.route("bad/m")?.model).toBe("fallback/m");
    expect(await eventually(() => b.breaker.route("bad/m")?.model === "fallback/m")).toBe(true);
    // The trip and its evidence are stored once, in PostgreSQL, for both to show.
    expect((await b.breaker.view()).trips.map((t) => t.model)).toEqual(["bad/m"]);

    await a.breaker.resume("bad/m", "alice");
    expect(await eventually(() => b.breaker.route("bad/m") === null)).toBe(true);
    expect((await b.breaker.view()).models.find((m) => m.model === "bad/m")?.resumed_by).toBe("alice");
  });
});
