import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { breakerRoutes } from "./routes.ts";
import { BreakerService } from "./service.ts";
import { BreakerStore } from "./store.ts";
import { served, stallTransition, storeTransition } from "./testing.ts";

describe("breaker routes", () => {
  let store: SqliteStore;
  let app: ReturnType<typeof breakerRoutes>;
  const now = 1_800_000_000_000;

  beforeEach(async () => {
    store = await openSqliteStore(":memory:");
    const cfg = configSchema.parse({}).breaker;
    for (let i = 0; i < 4; i++) {
      store.recordRequest(served("p/bad", `ses_b${i}`, now - 10_000 + i));
      store.recordRequest(served("p/good", `ses_g${i}`, now - 10_000 + i));
    }
    for (let i = 0; i < 3; i++) await storeTransition(store, stallTransition(`ses_b${i}`, now - 1000 + i));
    const svc = new BreakerService({ store: new BreakerStore(store.db), config: () => cfg, now: () => now });
    svc.evaluate();
    app = breakerRoutes(svc);
  });
  afterEach(async () => await store.close());

  it("lists models and trips with evidence", async () => {
    const res = await app.request("/api/breaker");
    expect(res.status).toBe(200);
    const body = (await res.json()) as { models: Array<{ model: string; phase: string }>; trips: unknown[] };
    expect(body.models.map((m) => `${m.model}:${m.phase}`)).toEqual(["p/bad:open", "p/good:closed"]);
    expect(body.trips).toHaveLength(1);
    expect((await app.request("/api/breaker?limit=0")).status).toBe(400);
  });

  it("resumes a model named with a slash; strict bodies", async () => {
    const post = (body: string) =>
      app.request(`/api/breaker/${encodeURIComponent("p/bad")}/resume`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
      });
    expect((await post('{"by":"x","extra":1}')).status).toBe(400);
    expect((await post("not json")).status).toBe(400);
    expect((await post('{"by":"a\\u0001"}')).status).toBe(400);
    const ok = await post('{"by":"bob"}');
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ model: "p/bad", phase: "closed", by: "bob", at: now });
    const empty = await post("");
    expect(await empty.json()).toMatchObject({ by: "admin" });
  });
});
