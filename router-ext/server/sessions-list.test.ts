// GET /api/sessions and /metrics under volume, through the whole app (createApp,
// a real SQLite store): a flood of fresh quiet sessions never pushes a flagged,
// refused or marked one out of the answer, the answer says what it leaves out,
// and the per-session /metrics series need the admin token or the knob.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Heartbeat } from "../../shared/index.ts";
import { heartbeatSession, transition } from "../../test/helpers/wire-fixtures.ts";
import type { SessionsResponse } from "../api/schemas.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { createApp } from "./app.ts";
import { LiveConfig } from "./live-config.ts";

const ADMIN = "admin-token-for-the-list";
const PLUGIN = "plugin-token-for-the-list";
const T0 = 1_800_000_000_000;

const heartbeat = (at: number, ids: string[]): Heartbeat => ({
  type: "heartbeat",
  instance_id: "inst-list-1",
  plugin_version: "0.1.0",
  at,
  sessions: ids.map((id) => heartbeatSession(id)),
});

describe("the session list and /metrics under volume", () => {
  let store: SqliteStore;
  let config: LiveConfig;
  let app: ReturnType<typeof createApp>;
  let now = T0;
  const get = (path: string, token: string | null = ADMIN) =>
    app.request(path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const page = async (query = ""): Promise<SessionsResponse> => {
    const res = await get(`/api/sessions${query}`);
    expect(res.status, await res.clone().text()).toBe(200);
    return (await res.json()) as SessionsResponse;
  };
  const post = async (body: unknown) => {
    const res = await app.request("/progress", {
      method: "POST",
      headers: { authorization: `Bearer ${PLUGIN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    expect(res.status, await res.clone().text()).toBe(200);
  };

  beforeEach(async () => {
    now = T0;
    store = await openSqliteStore(":memory:", { now: () => now });
    config = LiveConfig.create({ fileLayers: [], flags: {}, overrides: [] });
    app = createApp({
      store,
      config,
      adminToken: ADMIN,
      pluginToken: PLUGIN,
      version: "dev",
      now: () => now,
    });
    // Four sessions an admin must see: looping now, flagged before (ok again), refused, marked.
    await post([
      transition("ses_loop", null, "build", "ok", "looping", T0, {
        top_target: "read a.ts",
        top_target_count: 9,
      }),
      transition("ses_was", null, "build", "ok", "stalling", T0 + 1),
      transition("ses_was", null, "build", "stalling", "ok", T0 + 2, { reason: null }),
      transition("ses_marked", null, "build", "ok", "stalling", T0 + 3),
    ]);
    await store.setRefusal("session", "ses_refused", "stopped", "alice", T0, "admin Stop");
    await post(heartbeat(T0 + 4, ["ses_refused"]));
    expect((await store.mark("ses_marked", "confirmed_loop", "bob", T0 + 5)).ok).toBe(true);
    await post([transition("ses_marked", null, "build", "stalling", "ok", T0 + 6, { reason: null })]);
    // Then 2,100 fresh quiet sessions, all seen later than those four.
    now = T0 + 60_000;
    for (let i = 0; i < 2100; i += 300)
      await post(
        heartbeat(
          now,
          Array.from({ length: 300 }, (_, j) => `ses_fresh_${i + j}`),
        ),
      );
  });
  afterEach(async () => await store.close());

  const ATTENTION = ["ses_loop", "ses_marked", "ses_refused", "ses_was"];

  it("every flagged, refused or marked session is in every answer, first; the totals say what is left out", async () => {
    const first = await page();
    expect(
      first.sessions
        .slice(0, 4)
        .map((s) => s.session_id)
        .sort(),
    ).toEqual(ATTENTION);
    expect(first).toMatchObject({ total: 2104, attention: 4, offset: 0, limit: 2000, truncated: true });
    expect(first.sessions).toHaveLength(2004);
    expect(first.sessions.find((s) => s.session_id === "ses_refused")?.refused).toBe(true);
    expect(first.next_offset).toBe(2000);
    const last = await page("?offset=2000&limit=2000");
    expect(
      last.sessions
        .map((s) => s.session_id)
        .filter((id) => !id.startsWith("ses_fresh_"))
        .sort(),
    ).toEqual(ATTENTION);
    expect(last.sessions).toHaveLength(104);
    expect(last).toMatchObject({ truncated: true, next_offset: null });
    const small = await page("?limit=10&offset=5");
    expect(
      small.sessions
        .map((s) => s.session_id)
        .slice(0, 4)
        .sort(),
    ).toEqual(ATTENTION);
    expect(small.sessions.slice(4).every((s) => s.session_id.startsWith("ses_fresh_"))).toBe(true);
    expect(small).toMatchObject({ total: 2104, truncated: true, next_offset: 15 });
    // Every quiet session is reachable by paging, once.
    const seen = new Set<string>();
    for (let offset: number | null = 0; offset !== null; ) {
      const p: SessionsResponse = await page(`?limit=700&offset=${offset}`);
      for (const s of p.sessions.slice(4)) seen.add(s.session_id);
      offset = p.next_offset;
    }
    expect(seen.size).toBe(2100);
  });

  it("query parameters are validated: unknown, repeated or out-of-range ones are a 400 naming them", async () => {
    for (const [query, issue] of [
      ["?limit=0", "limit"],
      ["?limit=2001", "limit"],
      ["?limit=ten", "limit"],
      ["?offset=-1", "offset"],
      ["?offset=1.5", "offset"],
      ["?limit=5&limit=6", "limit: given more than once"],
      ["?verdict=looping", "verdict: unknown field"],
    ] as const) {
      const res = await get(`/api/sessions${query}`);
      expect(res.status, query).toBe(400);
      expect(JSON.stringify(await res.json()), query).toContain(issue);
    }
    expect((await get("/api/sessions", null)).status).toBe(401);
  });

  it("/metrics: aggregate series for anyone, per-session series with the admin token or the knob", async () => {
    const pub = await (await get("/metrics", null)).text();
    expect(pub).toMatch(/^stallguard_flagged_sessions 1$/m);
    expect(pub).toMatch(/^stallguard_warning_series_omitted 1$/m);
    expect(pub).not.toContain("ses_loop");
    expect(pub).not.toMatch(/^stallguard_warning\{/m);
    expect((await get("/metrics", "wrong")).status).toBe(401);
    const admin = await (await get("/metrics")).text();
    expect(admin).toMatch(/^stallguard_warning\{session_id="ses_loop",.*verdict="looping".*\} 1$/m);
    expect(admin).toMatch(/^stallguard_warning_series_omitted 0$/m);
    expect(config.trySet("server.public_session_metrics", true).ok).toBe(true);
    expect(await (await get("/metrics", null)).text()).toMatch(
      /^stallguard_warning\{session_id="ses_loop",/m,
    );
  });
});
