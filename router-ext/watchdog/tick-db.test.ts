// The tick reading opencode's own database (no server configured anywhere)
// and reporting to the real router on loopback, with a real webhook channel:
// a loop flagged through the file, the blind rule (an unreadable file is
// blind, a readable one or none at all is not), a session whose plugin
// reports left to the plugin, the knobs, and a server on the same file read
// once. The clocks of the tick and the router are injected.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ExportDoc, syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { type Config, parseConfig } from "../../shared/index.ts";
import { type Hook, startHook, webhookConfig } from "../../test/helpers/hook.ts";
import { routerEnv } from "../../test/helpers/router-env.ts";
import { startTestRouter } from "../../test/helpers/test-router.ts";
import type { RunningServer } from "../server/start.ts";
import { runWatchdogTick, type WatchdogTickOptions } from "./tick.ts";

const T = 1_800_000_000_000;
const ADMIN = "tick-db-admin-token-0123456789";

function config(watchdog: Record<string, unknown> = {}): Config {
  const r = parseConfig([
    { source: "test", value: { watchdog: { timeout: "2s", lookback: "1h", ...watchdog } } },
  ]);
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config;
}

/** A session of 20 identical reads (looping), last updated at `updated`. */
function looping(index: number, updated: number): ExportDoc {
  const doc = syntheticSession(index, 20, { loopEvery: 1 });
  return { ...doc, info: { ...doc.info, time: { created: updated - 30_000, updated } } };
}

describe("runWatchdogTick on opencode.db", () => {
  let tmp: string;
  let srv: RunningServer;
  let hook: Hook<{ title: string; state: string; summary: string }>;
  let routerNow = T;
  let n = 0;
  const logs: string[] = [];

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-tickdb-"));
    hook = await startHook();
    srv = await startTestRouter(tmp, webhookConfig(hook.url), {
      env: routerEnv(tmp, { STALLGUARD_ADMIN_TOKEN: ADMIN }),
      now: () => routerNow,
      blindCheckMs: 3_600_000,
    });
  });
  afterAll(async () => {
    await srv?.close();
    await hook?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  /** A fresh tick state and an opencode home whose opencode.db holds `docs` (none: no file). */
  const fresh = (docs: ExportDoc[] | null) => {
    const home = join(tmp, `home${++n}`);
    const dbPath = join(home, ".local", "share", "opencode", "opencode.db");
    mkdirSync(join(home, ".local", "share", "opencode"), { recursive: true });
    if (docs) writeOpencodeDb(dbPath, docs);
    logs.length = 0;
    // No rc-servers.json, no --server, no watchdog.servers: the file is the only source.
    const env = { HOME: home } as NodeJS.ProcessEnv;
    const tick = (at: number, over: Partial<WatchdogTickOptions> = {}) => {
      routerNow = at;
      return runWatchdogTick({
        config: config(),
        routerUrl: srv.url,
        token: srv.pluginToken,
        statePath: join(home, "state", "watchdog.json"),
        now: at,
        env,
        log: (l) => logs.push(l),
        ...over,
      });
    };
    return { home, dbPath, tick };
  };
  const api = async (path: string) =>
    (await (
      await fetch(`${srv.url}${path}`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as Record<
      string,
      // biome-ignore lint/suspicious/noExplicitAny: API JSON
      any
    >;
  const blindAlerts = () =>
    hook.bodies.filter((b) => /watchdog (is blind|sees sessions again)/.test(b.title));

  test("a loop in opencode.db with no server configured is flagged (source watchdog); not blind", async () => {
    const id = syntheticSession(1, 1).info.id;
    const { tick } = fresh([looping(1, T + 60_000), syntheticSession(2, 12)]);
    const r = await tick(T + 120_000);
    expect(r).toMatchObject({ db: "read", servers: 0, blind: false, blindReason: null, router: "ok" });
    expect(r.transitions.map((t) => [t.session_id, t.source, t.verdict])).toEqual([
      [id, "watchdog", "looping"],
    ]);
    const row = (await api("/api/sessions")).sessions.find(
      (s: { session_id: string }) => s.session_id === id,
    );
    expect(row).toMatchObject({ source: "watchdog", verdict: "looping" });
    const health = await api("/health");
    expect(health.watchdog).toMatchObject({ blind: false, db: "read", servers: 0, sessions: 2 });
    expect(blindAlerts()).toEqual([]);
    // The next tick: nothing updated since, nothing read, nothing new; still not blind.
    const again = await tick(T + 420_000);
    expect(again).toMatchObject({ db: "read", sessions: 0, blind: false, transitions: [] });
  });

  test("unreadable opencode.db and no server: blind, said once; readable again resolves; no file at all is quiet", async () => {
    const { dbPath, tick } = fresh(null);
    // No file and the one server named not answering: quiet; the silent server is logged, not "blind".
    const quiet = await tick(T + 1_000_000, { servers: ["http://127.0.0.1:1"], blindAfter: 1 });
    expect(quiet).toMatchObject({ db: "missing", servers: 0, blind: false, blindReason: null });
    expect(logs).toEqual(["watchdog: warning: no opencode server answered for 1 ticks (1 known)"]);
    expect((await api("/health")).watchdog).toMatchObject({ blind: false, db: "missing", servers: 0 });
    writeFileSync(dbPath, "not a database ".repeat(300));
    const a = await tick(T + 1_300_000);
    const b = await tick(T + 1_600_000);
    for (const r of [a, b])
      expect(r).toMatchObject({ db: "unreadable", blind: true, blindReason: "db_unreadable" });
    expect(logs.filter((l) => l.includes("the watchdog is blind"))).toHaveLength(1);
    expect(logs.find((l) => l.includes("the watchdog is blind"))).toContain(dbPath);
    await expect.poll(() => blindAlerts().length, { timeout: 10_000 }).toBe(1);
    expect(blindAlerts()[0]).toMatchObject({
      title: "stallguard: the watchdog is blind",
      state: "trigger",
      summary: "opencode.db could not be read; sessions without the plugin are unwatched",
    });
    rmSync(dbPath);
    writeOpencodeDb(dbPath, [syntheticSession(3, 5)]);
    const c = await tick(T + 1_900_000);
    expect(c).toMatchObject({ db: "read", blind: false });
    await expect.poll(() => blindAlerts().at(-1)?.state, { timeout: 10_000 }).toBe("resolve");
    expect(blindAlerts()).toHaveLength(2);
  });

  test("a session whose plugin reports is left to the plugin, and taken up again once the plugin is gone", async () => {
    const idx = 5;
    const id = syntheticSession(idx, 1).info.id;
    const { dbPath, tick } = fresh([looping(idx, T + 2_050_000)]);
    // The session's plugin sends its heartbeat (verdict ok: it judges the session itself).
    routerNow = T + 2_060_000;
    const hb = await fetch(`${srv.url}/progress`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${srv.pluginToken}` },
      body: JSON.stringify({
        type: "heartbeat",
        instance_id: "inst-tickdb",
        plugin_version: "0.1.0",
        at: routerNow,
        sessions: [
          {
            session_id: id,
            parent_id: null,
            root_id: id,
            agent: "build",
            verdict: "ok",
            turns: 12,
            turns_since_landed: 12,
            last_landed_at: null,
            context_tokens: 2000,
          },
        ],
      }),
    });
    expect(hb.status).toBe(200);
    const covered = await tick(T + 2_070_000);
    expect(covered.transitions.map((t) => t.session_id)).toEqual([id]);
    const one = async () => (await api(`/api/sessions/${id}`)).session;
    expect(await one()).toMatchObject({ verdict: "ok", source: "plugin" });
    expect(await (await fetch(`${srv.url}/metrics`)).text()).toMatch(
      /^stallguard_watchdog_covered_total 1$/m,
    );
    // Still live: reported again (the watchdog did not remember it), left alone again.
    const again = await tick(T + 2_080_000);
    expect(again.transitions.map((t) => t.session_id)).toEqual([id]);
    expect(await one()).toMatchObject({ verdict: "ok" });
    // Three heartbeats (3 min) without a word from the plugin while the session goes on
    // (opencode without the plugin): the watchdog's verdict stands.
    const w = new Database(dbPath);
    w.prepare("UPDATE session SET time_updated = ? WHERE id = ?").run(T + 2_300_000, id);
    w.close();
    const gone = await tick(T + 2_080_000 + 4 * 60_000);
    expect(gone.transitions.map((t) => [t.session_id, t.verdict])).toEqual([[id, "looping"]]);
    expect(await one()).toMatchObject({ verdict: "looping", source: "watchdog" });
    const after = await tick(T + 2_080_000 + 5 * 60_000);
    expect(after.transitions).toEqual([]);
  });

  test("knobs: watchdog.opencode_db.enabled false reads nothing; .path reads that file", async () => {
    const { dbPath, tick } = fresh([looping(7, T + 3_000_000)]);
    const off = await tick(T + 3_010_000, { config: config({ opencode_db: { enabled: false } }) });
    expect(off).toMatchObject({ db: "off", sessions: 0, blind: false });
    const other = join(tmp, "elsewhere.db");
    writeOpencodeDb(other, [looping(8, T + 3_000_000)]);
    const elsewhere = await tick(T + 3_020_000, { config: config({ opencode_db: { path: other } }) });
    expect(elsewhere.transitions.map((t) => t.session_id)).toEqual([syntheticSession(8, 1).info.id]);
    expect(dbPath).not.toBe(other);
  });

  test("a server on the same database: its sessions are read once, from the file", async () => {
    const idx = 9;
    const id = syntheticSession(idx, 1).info.id;
    const { tick } = fresh([looping(idx, T + 4_000_000)]);
    const hits: string[] = [];
    const oc: Server = createServer((req, res) => {
      hits.push(req.url ?? "");
      const list = [{ id, directory: "/PROJECT_DIR", time: { created: T, updated: T + 4_000_000 } }];
      const body = req.url?.startsWith("/session?")
        ? list
        : req.url === "/global/health"
          ? { healthy: true }
          : [];
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
    });
    await new Promise<void>((r) => oc.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(oc.address() as AddressInfo).port}`;
      const r = await tick(T + 4_010_000, { servers: [url] });
      expect(r).toMatchObject({ db: "read", servers: 1, sessions: 1, blind: false });
      expect(r.transitions.map((t) => t.session_id)).toEqual([id]);
      expect(hits.some((h) => h.startsWith("/session?"))).toBe(true);
      expect(hits.filter((h) => h.startsWith(`/session/${id}`))).toEqual([]);
    } finally {
      await new Promise<void>((r) => oc.close(() => r()));
    }
  });
});
