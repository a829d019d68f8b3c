// The gate's facts in memory against the SQLite file they mirror: after the
// gate, the modes, an admin and retention have all written, a store opened
// afresh on the same file (facts read from the tables) decides every request
// as the running one does (facts kept by applying each change). And a store
// whose database refuses writes keeps deciding from memory.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { CONTEXTS_BEFORE, variedHistory } from "../../test/helpers/context-history.ts";
import { transition } from "../../test/helpers/wire-fixtures.ts";
import { served } from "../breaker/testing.ts";
import type { GateIdentity } from "../gate/types.ts";
import { planKnobs, planTransition } from "../modes/plan.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { readGateFacts } from "./gate-facts.ts";

const T0 = 1_800_000_000_000;
const knobs = planKnobs(
  configSchema.parse({ progress: { mode: "auto_recover", max_recoveries: 2, context_cap: 4000 } }),
);
const who = (sessionId: string, over: Partial<GateIdentity> = {}): GateIdentity => ({
  sessionId,
  agent: "build",
  parent: null,
  pluginVersion: null,
  ...over,
});

describe("gate facts on SQLite", () => {
  let dir: string;
  let path: string;
  let store: SqliteStore;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-facts-"));
    path = join(dir, "s.db");
    store = await openSqliteStore(path);
  });
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const storeTransition = (t: ReturnType<typeof transition>, now: number) =>
    store.storeProgress([t], { now, plan: (ctx, tr) => planTransition(ctx, tr, knobs, now) });

  it("memory decides as a store reopened on the file does", async () => {
    // The gate learns a tree bottom-up; the plugin reports another tree top-down.
    store.decide(who("child", { parent: "mid" }), T0);
    store.decide(who("mid", { parent: "top" }), T0 + 1);
    store.decide(who("orphan", { parent: "gone" }), T0 + 2);
    await storeTransition(transition("w", "root", "general", "ok", "looping", T0 + 10), T0 + 10); // stage 1: w refused by the mode
    await storeTransition(transition("w2", "root", "general", "ok", "looping", T0 + 20), T0 + 20); // stage 2: root capped
    await store.setRefusal("tree", "top", "stopped", "alice", T0 + 30, "admin Stop");
    await store.setRefusal("session", "lone", "stopped", "bob", T0 + 31, null);
    await store.setRefusal("session", "lone", "running", "bob", T0 + 32, null);
    // Measured contexts: sib over the cap, w compacted since.
    store.decide(who("sib", { parent: "root" }), T0 + 39);
    store.recordRequest({ ...served("m", "sib", T0 + 40, "root"), context_tokens: 5000 });
    store.recordRequest({ ...served("m", "w", T0 + 41, "root"), context_tokens: 6000 });
    store.recordRequest({ ...served("m", "w", T0 + 42, "root"), agent: "compaction", context_tokens: 100 });
    store.recordRequest({ ...served("m", "w", T0 + 43, "root"), context_tokens: null });

    const asked = [
      who("child"),
      who("mid"),
      who("top"),
      who("orphan"),
      who("gone"),
      who("w"),
      who("w", { agent: "compaction" }),
      who("w2"),
      who("sib"),
      who("sib", { agent: "title" }),
      who("root"),
      who("lone"),
      who("new", { parent: "child" }),
      who("new2", { parent: "w" }),
    ];
    const live = asked.map((id) => store.peek(id));
    expect(live[0]).toMatchObject({ refused: true, scope: "tree", rootId: "top" });
    expect(live[5]).toMatchObject({ refused: true, scope: "session", rootId: "root" });
    expect(live[6]).toMatchObject({ refused: false });
    expect(live[7]).toMatchObject({ refused: true, scope: "session", rootId: "root" });
    expect(live[8]).toMatchObject({ refused: false, overCap: { cap: 4000, tokens: 5000 } });
    expect(live[9]).toMatchObject({ refused: false, rootId: "root" });
    expect(live[12]).toMatchObject({ refused: true, rootId: "top" });
    await store.close();
    store = await openSqliteStore(path);
    expect(asked.map((id) => store.peek(id))).toEqual(live);
  });

  it("each session's context reads as the query before (a sort of every request) read it, on varied histories", async () => {
    for (const r of variedHistory(T0, 3000)) store.recordRequest(r);
    await store.flush();
    const byId = <T extends { sessionId: string }>(rows: T[]) =>
      [...rows].sort((a, b) => a.sessionId.localeCompare(b.sessionId));
    const now = byId((await readGateFacts(store.sql)).contexts);
    expect(now.length).toBeGreaterThan(100);
    expect(now.some((c) => c.compactedAt > 0 && c.at === -1)).toBe(true);
    expect(now.some((c) => c.compactedAt > 0 && c.at > c.compactedAt)).toBe(true);
    expect(now).toEqual(byId(await store.sql.all<(typeof now)[number]>(CONTEXTS_BEFORE)));
  });

  it("a prune takes pruned sessions and contexts out of memory too, and keeps stopped trees", async () => {
    store.decide(who("old", { parent: "oldroot" }), T0);
    store.recordRequest({ ...served("m", "old", T0, "oldroot"), context_tokens: 9000 });
    store.decide(who("kid", { parent: "kept" }), T0);
    await store.setRefusal("tree", "kept", "stopped", "alice", T0, null);
    await store.prune(T0 + 100_000, 10_000);
    expect(store.facts.rootOf("old")).toBeUndefined();
    expect(store.facts.lastContext("old")).toBeUndefined();
    expect(store.peek(who("kid"))).toMatchObject({ refused: true, rootId: "kept" });
  });

  it("a database that refuses writes: known refusals stay refused, unknown sessions pass, both marked; the writes land later", async () => {
    const logs: string[] = [];
    await store.close();
    store = await openSqliteStore(path, { log: (l) => logs.push(l) });
    await store.setRefusal("tree", "top", "stopped", "alice", T0, "admin Stop");
    store.decide(who("child", { parent: "top" }), T0);
    await store.flush();
    store.db.pragma("query_only = ON"); // SQLite itself refuses every write from here on
    store.recordRequest({ ...served("m", "child", T0 + 1, "top"), refused: true, status: 403 });
    await store.flush();
    expect(store.writes.failing).toMatch(/^SQLITE_READONLY/);
    expect(await store.writable()).toBe(false);
    expect(store.decide(who("child"), T0 + 2)).toMatchObject({
      refused: true,
      scope: "tree",
      degraded: true,
    });
    expect(store.decide(who("fresh", { parent: "elsewhere" }), T0 + 3)).toMatchObject({
      refused: false,
      degraded: true,
    });
    store.recordRequest(served("m", "fresh", T0 + 4, "elsewhere"));
    await store.flush();
    expect(store.writes.stats.pending).toBeGreaterThan(0);
    await expect(store.setRefusal("tree", "top", "running", "bob", T0 + 5, null)).rejects.toThrow(/readonly/);
    expect(store.peek(who("child")).refused).toBe(true); // the failed Resume changed nothing
    expect(logs.filter((l) => l.includes("writes failing"))).toHaveLength(1);

    store.db.pragma("query_only = OFF");
    await store.writes.drain();
    expect(store.writes.failing).toBeNull();
    expect(store.writes.stats.pending).toBe(0);
    expect(store.decide(who("child"), T0 + 6).degraded).toBeUndefined();
    await store.flush();
    const rows = store.db
      .prepare("SELECT session_id, refused FROM requests ORDER BY started_at")
      .all() as Array<{ session_id: string; refused: number }>;
    expect(rows).toEqual([
      { session_id: "child", refused: 1 },
      { session_id: "fresh", refused: 0 },
    ]);
    const fresh = store.db.prepare("SELECT root_id FROM sessions WHERE session_id = 'fresh'").get();
    expect(fresh).toEqual({ root_id: "elsewhere" });
    expect(logs.some((l) => l.includes("writes work again"))).toBe(true);
  });
});
