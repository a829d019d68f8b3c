import { describe, expect, it } from "vitest";
import {
  evidenceOf,
  mayTrip,
  modelRates,
  type ServedRecord,
  type StallRecord,
  type TripRule,
} from "./rule.ts";

const rule: TripRule = { minSessions: 3, windowMs: 60 * 60_000, rateRatio: 3, minTraffic: 3 };
const now = 10 * 60 * 60_000;

/** n trees served by a model, one request per tree at t. */
function serve(model: string, trees: string[], t = now - 10 * 60_000): ServedRecord[] {
  return trees.map((root) => ({ model, sessionId: root, rootId: root, at: t }));
}
function stall(sessionId: string, at = now - 5 * 60_000, since = now - 20 * 60_000): StallRecord {
  return { sessionId, rootId: sessionId, verdict: "looping", at, since };
}
/** The rule on whole request records, as a list (the store reads the same evidence in two queries). */
const ratesOf = (served: ServedRecord[], stalls: StallRecord[], r: TripRule, at: number) =>
  modelRates(evidenceOf(served, r, at), stalls, r, at);
const ids = (p: string, n: number) => Array.from({ length: n }, (_, i) => `${p}${i}`);

describe("breaker trip rule", () => {
  it("trips exactly the model whose trees stall, not the healthy one", () => {
    const bad = ids("b", 4);
    const good = ids("g", 6);
    const rates = ratesOf(
      [...serve("bad/model", bad), ...serve("good/model", good)],
      bad.slice(0, 3).map((s) => stall(s)),
      rule,
      now,
    );
    const byModel = Object.fromEntries(rates.map((r) => [r.model, r]));
    expect(byModel["bad/model"]?.trip).toBe(true);
    expect(byModel["bad/model"]?.stalledTrees).toBe(3);
    expect(byModel["bad/model"]?.evidence.map((e) => e.sessionId)).toEqual(["b0", "b1", "b2"]);
    expect(byModel["good/model"]?.trip).toBe(false);
  });

  it("does not trip on one hard task: many stalled sessions in one tree count once", () => {
    const served: ServedRecord[] = [
      ...["w1", "w2", "w3", "w4"].map((c) => ({
        model: "m",
        sessionId: c,
        rootId: "root",
        at: now - 10 * 60_000,
      })),
      ...serve("m", ["x", "y"]),
      ...serve("other", ids("o", 5)),
    ];
    const stalls = ["w1", "w2", "w3", "w4"].map((s) => ({ ...stall(s), rootId: "root" }));
    const m = ratesOf(served, stalls, rule, now).find((r) => r.model === "m");
    expect(m?.stalledTrees).toBe(1);
    expect(m?.trip).toBe(false);
  });

  it("needs comparison traffic: a model alone is never tripped", () => {
    const trees = ids("t", 5);
    const [only] = ratesOf(
      serve("solo", trees),
      trees.map((t) => stall(t)),
      rule,
      now,
    );
    expect(only?.stalledTrees).toBe(5);
    expect(only?.trip).toBe(false);
  });

  it("does not trip when the other models stall about as often", () => {
    const a = ids("a", 5);
    const b = ids("b", 5);
    const stalls = [...a.slice(0, 3), ...b.slice(0, 3)].map((s) => stall(s));
    const rates = ratesOf([...serve("a", a), ...serve("b", b)], stalls, rule, now);
    expect(rates.every((r) => !r.trip)).toBe(true);
  });

  it("attributes a stall only to models that served the session inside its stall window", () => {
    const trees = ids("s", 4);
    const served = [
      // m1 served these sessions only before the last landed change.
      ...serve("m1", trees, now - 50 * 60_000),
      ...serve("m2", trees, now - 10 * 60_000),
      ...serve("m3", ids("h", 6)),
    ];
    const stalls = trees.slice(0, 3).map((s) => stall(s, now - 5 * 60_000, now - 30 * 60_000));
    const rates = Object.fromEntries(ratesOf(served, stalls, rule, now).map((r) => [r.model, r]));
    expect(rates.m1?.stalledTrees).toBe(0);
    expect(rates.m2?.stalledTrees).toBe(3);
    expect(rates.m2?.trip).toBe(true);
  });

  it("ignores traffic and verdicts outside the window", () => {
    const bad = ids("b", 4);
    const old = now - 2 * 60 * 60_000;
    const rates = ratesOf(
      [...serve("bad", bad, old), ...serve("good", ids("g", 5))],
      bad.slice(0, 3).map((s) => stall(s, old + 60_000, old - 60_000)),
      rule,
      now,
    );
    expect(rates.find((r) => r.model === "bad")).toBeUndefined();
    expect(rates.every((r) => !r.trip)).toBe(true);
  });

  it("respects min_sessions and min_traffic", () => {
    const bad = ids("b", 3);
    const served = [...serve("bad", bad), ...serve("good", ids("g", 6))];
    // Whether "bad" trips with these of its sessions stalled.
    const badTrips = (stalled: string[], r = rule) =>
      ratesOf(
        served,
        stalled.map((s) => stall(s)),
        r,
        now,
      ).find((x) => x.model === "bad")?.trip;
    expect(badTrips(bad.slice(0, 2))).toBe(false);
    expect(badTrips(bad)).toBe(true);
    expect(badTrips(bad, { ...rule, minTraffic: 4 })).toBe(false);
  });

  it("may trip only with min_sessions distinct stalled trees in the window; below that no model trips", () => {
    const served = [...serve("bad", ids("b", 6)), ...serve("good", ids("g", 6))];
    const cases: StallRecord[][] = [
      [],
      ids("b", 2).map((s) => stall(s)),
      // Four stalled sessions of one tree are one tree.
      ids("b", 4).map((s) => ({ ...stall(s), rootId: "b0" })),
      // A third stalled tree outside the window does not count.
      [...ids("b", 2).map((s) => stall(s)), stall("b2", now - 2 * rule.windowMs)],
    ];
    for (const stalls of cases) {
      expect(mayTrip(stalls, rule, now)).toBe(false);
      expect(ratesOf(served, stalls, rule, now).some((r) => r.trip)).toBe(false);
    }
    const three = ids("b", 3).map((s) => stall(s));
    expect(mayTrip(three, rule, now)).toBe(true);
    expect(ratesOf(served, three, rule, now).find((r) => r.model === "bad")?.trip).toBe(true);
  });

  it("weighs the same from one record per model and tree plus the stalled sessions' requests", () => {
    // What the store reads on a busy router instead of every request of the window.
    const bad = ids("b", 5);
    const served = [
      ...bad.flatMap((b) => [0, 1, 2].flatMap((k) => serve("bad", [b], now - (6 + k) * 60_000))),
      ...ids("g", 8).flatMap((g) => [...serve("good", [g]), ...serve("good", [g], now - 30 * 60_000)]),
      ...serve("bad", ["g0"], now - 2 * 60 * 60_000),
    ];
    const stalls = [...bad.slice(0, 3).map((b) => stall(b)), stall("g1", now - 60_000, now - 40 * 60_000)];
    const full = evidenceOf(served, rule, now);
    const stalled = new Set(stalls.map((s) => s.sessionId));
    const pairs = new Map(
      full.trees.map((t) => [`${t.model} ${t.rootId}`, { model: t.model, rootId: t.rootId }]),
    );
    const compact = {
      trees: [...pairs.values()],
      requests: full.requests.filter((r) => stalled.has(r.sessionId)),
    };
    expect(compact.trees.length).toBeLessThan(full.trees.length / 2);
    const rates = modelRates(full, stalls, rule, now);
    expect(rates.find((r) => r.model === "bad")?.trip).toBe(true);
    expect(rates.find((r) => r.model === "good")?.stalledTrees).toBe(1);
    expect(modelRates(compact, stalls, rule, now)).toEqual(rates);
  });
});
