import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { RequestRecord } from "../gate/types.ts";
import { openSqliteStore } from "../store/sqlite-store.ts";
import { breakerEvidence, landedSince } from "./evidence-reads.ts";
import { evidenceOf, modelRates, type ServedRecord, type StallRecord, type TripRule } from "./rule.ts";
import { BreakerStore } from "./store.ts";
import { served } from "./testing.ts";

describe("landedSince", () => {
  it("reads last_landed_at from a stored signals document; 0 when absent or malformed", () => {
    expect(landedSince('{"last_landed_at":1234,"turns":3}')).toBe(1234);
    expect(landedSince('{"last_landed_at":null}')).toBe(0);
    expect(landedSince('{"last_landed_at":"1234"}')).toBe(0);
    expect(landedSince("null")).toBe(0);
    expect(landedSince("{not json")).toBe(0);
  });
});

describe("the breaker's evidence read from the requests table", () => {
  const rule: TripRule = { minSessions: 3, windowMs: 60 * 60_000, rateRatio: 3, minTraffic: 3 };
  const now = 1_800_000_000_000;

  it("weighs exactly as every request of the window would, reading one row per model and tree", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sg-breaker-evidence-"));
    const store = await openSqliteStore(join(dir, "s.db"));
    try {
      const records: RequestRecord[] = [];
      for (let i = 0; i < 600; i++) {
        const tree = i % 12;
        const model = tree < 5 ? "bad/m" : "good/m";
        records.push(
          served(
            model,
            `ses_${tree}_${Math.floor(i / 12) % 3}`,
            now - 50 * 60_000 + i * 4000,
            `ses_${tree}_0`,
          ),
        );
      }
      // Not the rule's evidence: refused, no model, outside the window (SQL must leave them out as the list does).
      records.push({
        ...served("bad/m", "ses_5_1", now - 20 * 60_000, "ses_5_0"),
        refused: true,
        status: 403,
      });
      records.push({ ...served("x/m", "ses_9_1", now - 20 * 60_000, "ses_9_0"), model: null });
      records.push(served("old/m", "ses_10_1", now - 2 * 60 * 60_000, "ses_10_0"));
      for (const r of records) store.recordRequest(r);
      await store.flush();
      const stalls: StallRecord[] = [0, 1, 2, 6].map((t) => ({
        sessionId: `ses_${t}_1`,
        rootId: `ses_${t}_0`,
        verdict: "looping",
        at: now - 5 * 60_000,
        since: now - 40 * 60_000,
      }));
      const read = await breakerEvidence(store.sql).served(
        now - rule.windowMs,
        now,
        stalls.map((s) => s.sessionId),
      );
      const listed: ServedRecord[] = records
        .filter((r) => !r.refused && r.model !== null && r.session_id !== null)
        .map((r) => ({
          model: r.model as string,
          sessionId: r.session_id as string,
          rootId: r.root_id ?? (r.session_id as string),
          at: r.started_at,
        }));
      expect(read.trees.length).toBe(12);
      const stalled = new Set(stalls.map((s) => s.sessionId));
      // Only the stalled sessions' requests, every one of them in the window.
      expect(read.requests.length).toBe(
        listed.filter((r) => stalled.has(r.sessionId) && r.at >= now - rule.windowMs).length,
      );
      expect(read.requests.length).toBeGreaterThan(50);
      const rates = modelRates(read, stalls, rule, now);
      expect(rates).toEqual(modelRates(evidenceOf(listed, rule, now), stalls, rule, now));
      expect(rates.find((r) => r.model === "bad/m")).toMatchObject({ stalledTrees: 3, trip: true });
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("on serve's store the evidence is read on the writer thread, off the event loop: the same answer", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sg-breaker-evidence-"));
    const main: string[] = [];
    const store = await openSqliteStore(join(dir, "s.db"), {
      writerThread: true,
      verbose: (sql) => main.push(String(sql)),
    });
    try {
      for (let i = 0; i < 300; i++)
        store.recordRequest(served(i % 3 ? "a/m" : "b/m", `ses_${i % 30}`, now - i * 1000));
      await store.flush();
      const stalled = ["ses_1", "ses_2", "ses_3"];
      const here = await new BreakerStore(store.sql).served(now - rule.windowMs, now, stalled);
      expect(here.trees.length).toBe(30);
      main.length = 0;
      const offMain = new BreakerStore(store.sql, undefined, store.reads);
      expect(await offMain.served(now - rule.windowMs, now, stalled)).toEqual(here);
      expect(await offMain.stalls(now - rule.windowMs, now)).toEqual([]);
      expect(main.filter((s) => s.includes("FROM requests") || s.includes("FROM transitions"))).toEqual([]);
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("reads the requests of any number of stalled sessions (in chunks of bound parameters)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "sg-breaker-evidence-"));
    const store = await openSqliteStore(join(dir, "s.db"));
    try {
      // 450 stalled sessions, two requests each, and as many healthy ones: three chunks of 200 or fewer.
      for (let i = 0; i < 900; i++) {
        store.recordRequest(served(i % 2 ? "a/m" : "b/m", `ses_${i}`, now - 30 * 60_000 + i));
        store.recordRequest(served(i % 2 ? "a/m" : "b/m", `ses_${i}`, now - 20 * 60_000 + i));
      }
      await store.flush();
      const stalled = Array.from({ length: 450 }, (_, i) => `ses_${i * 2}`);
      const read = await breakerEvidence(store.sql).served(now - rule.windowMs, now, [
        ...stalled,
        ...stalled,
      ]);
      expect(read.trees.length).toBe(900);
      expect(read.requests.length).toBe(900);
      expect(new Set(read.requests.map((r) => r.sessionId))).toEqual(new Set(stalled));
    } finally {
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
