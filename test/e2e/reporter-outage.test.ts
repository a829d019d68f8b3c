// No report lost: the plugin's real Reporter against the real router. The
// router goes away while 300 transitions (with full-size reports) and a
// heartbeat over 600 live sessions queue up, far more than one 64 KiB body;
// when it is back every transition is stored exactly once and every session
// reads as live, with no 413 dropping anything.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { Reporter } from "../../plugin/reporter.ts";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import type { Heartbeat } from "../../shared/index.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { heartbeatSession, transition } from "../helpers/wire-fixtures.ts";

const ADMIN = "outage-admin-token";

describe("reporter across a router outage (real router, real SQLite file)", () => {
  const dir = mkdtempSync(join(tmpdir(), "sg-outage-"));
  let srv: RunningServer | undefined;
  let reporter: Reporter | undefined;
  afterAll(async () => {
    reporter?.close();
    await srv?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const start = (port: number) =>
    startServer({
      port,
      dbPath: join(dir, "stallguard.db"),
      root: null,
      env: routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN }),
      log: () => {},
    });

  it("300 transitions and 600 live sessions: every transition stored once, every session live", async () => {
    srv = await start(0);
    const { port, url } = srv;
    const logs: string[] = [];
    reporter = new Reporter({
      url,
      token: srv.pluginToken,
      timeoutMs: 2000,
      queueSize: 1000,
      retryMs: 50,
      maxRetryMs: 200,
      log: (level, code, message) => logs.push(`${level} ${code} ${message}`),
    });
    await srv.close();
    srv = undefined;

    const now = Date.now();
    for (let i = 0; i < 300; i++) {
      reporter.enqueue(
        transition(`ses_t${i}`, null, "build", "ok", "stalling", now + i, {
          report: `[stallguard] session ses_t${i} ${"r".repeat(1500)}`,
        }),
      );
    }
    const beat: Heartbeat = {
      type: "heartbeat",
      instance_id: "inst-outage",
      plugin_version: "0.1.0",
      at: now,
      sessions: Array.from({ length: 600 }, (_, i) =>
        heartbeatSession(`ses_live${i}`, { turns: i, last_landed_at: now, context_tokens: 1000 + i }),
      ),
    };
    reporter.enqueue(beat);
    await expect.poll(() => reporter?.stats.failures ?? 0, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect(reporter.pending).toBeGreaterThanOrEqual(301);

    srv = await start(port);
    await expect.poll(() => reporter?.pending, { timeout: 30_000, interval: 100 }).toBe(0);

    expect(reporter.stats).toMatchObject({ dropped: 0, rejected: 0 });
    const db = new Database(srv.dbPath, { readonly: true });
    try {
      const ids = db.prepare("SELECT id FROM transitions ORDER BY id").all() as Array<{ id: string }>;
      expect(ids).toHaveLength(300);
      expect(new Set(ids.map((r) => r.id)).size).toBe(300);
      const dups = db.prepare("SELECT value FROM counters WHERE name = 'progress_duplicates_total'").get() as
        | { value: number }
        | undefined;
      expect(dups?.value ?? 0).toBe(0);
    } finally {
      db.close();
    }
    const res = await fetch(`${srv.url}/api/sessions`, { headers: { authorization: `Bearer ${ADMIN}` } });
    const { sessions } = (await res.json()) as {
      sessions: Array<{ session_id: string; plugin_live: boolean }>;
    };
    const live = sessions.filter((s) => s.session_id.startsWith("ses_live") && s.plugin_live);
    expect(live).toHaveLength(600);
    // Every body stayed under the router's limit: no 413 was ever answered.
    const metrics = await (await fetch(`${srv.url}/metrics`)).text();
    expect(metrics).not.toMatch(/stallguard_refused_requests_total\{path="progress",reason="413"\}/);
    expect(reporter.maxBytes).toBe(65_536);
    expect(logs.filter((l) => l.startsWith("error"))).toEqual([]);
  });
});
