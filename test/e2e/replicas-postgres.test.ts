// Two replicas as one router: a real PostgreSQL (test/helpers/postgres.ts),
// two `stallguard serve` processes on it (the built bundle), and a real
// HAProxy in front (round robin, /health checks). A Stop or Resume made
// through replica A is enforced by replica B's gate within a second (the
// LISTEN/NOTIFY feed); a looping transition alerts once, however many
// replicas it reaches; kill -9 of A during 2,000 /progress posts through the
// balancer loses nothing acknowledged and stores nothing twice, and B keeps
// refusing what was refused.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Reporter } from "../../plugin/reporter.ts";
import { openPgSql, type PgSql } from "../../router-ext/store/pg-sql.ts";
import { parsePgTarget } from "../../router-ext/store/pg-target.ts";
import { type ServeProcess, spawnServe } from "../helpers/attack-tools.ts";
import { type Haproxy, haproxyBin, startHaproxy } from "../helpers/haproxy.ts";
import { type Hook, startHook, webhookConfig } from "../helpers/hook.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { type PgServer, pgBin, pgTitle, startPostgres } from "../helpers/postgres.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { transition } from "../helpers/wire-fixtures.ts";

const ADMIN = "replicas-admin-token";
const PLUGIN = "replicas-plugin-token";
const CLIENT = "replicas-client-key";

const title = haproxyBin
  ? pgTitle("two replicas on PostgreSQL behind HAProxy")
  : "two replicas [skipped: no haproxy]";

describe.skipIf(!pgBin || !haproxyBin)(title, () => {
  let dir: string;
  let pg: PgServer;
  let db: PgSql;
  let model: ModelServer;
  let hook: Hook;
  let lb: Haproxy;
  const replicas: Record<"a" | "b", { proc: ServeProcess; url: string }> = {} as never;

  async function replica(name: "a" | "b", config: string) {
    const proc = spawnServe(
      ["--db", pg.url, "--upstream", model.url, "--config", config],
      routerEnv(join(dir, name), {
        STALLGUARD_ADMIN_TOKEN: ADMIN,
        STALLGUARD_TOKEN: PLUGIN,
        STALLGUARD_CLIENT_KEY: CLIENT,
        STALLGUARD_PG_PASSWORD: pg.password,
        STALLGUARD_REPLICA: name,
      }),
    );
    replicas[name] = { proc, url: await proc.listening };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-replicas-"));
    pg = await startPostgres();
    db = await openPgSql({ target: parsePgTarget(pg.url), password: pg.password });
    model = await startModelServer({ script: () => ({ kind: "text", text: "spent" }) });
    hook = await startHook();
    const config = join(dir, "local.yaml");
    writeFileSync(config, webhookConfig(hook.url, ["quiet_window: 0"]));
    // Started together: the migrations race and run once.
    await Promise.all([replica("a", config), replica("b", config)]);
    lb = await startHaproxy(
      (["a", "b"] as const).map((n) => ({ name: n, port: Number(new URL(replicas[n].url).port) })),
    );
  });
  afterAll(async () => {
    await lb?.stop();
    for (const r of Object.values(replicas)) {
      if (r.proc.proc.exitCode === null && r.proc.proc.signalCode === null) r.proc.proc.kill("SIGTERM");
      await Promise.race([r.proc.exited, new Promise((res) => setTimeout(res, 6000))]);
      r.proc.proc.kill("SIGKILL");
    }
    await db?.close();
    await hook?.close();
    await model?.close();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (
    base: string,
    path: string,
    token: string,
    body: unknown,
    headers: Record<string, string> = {},
  ) =>
    fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
  const chat = async (base: string, session: string, parent?: string) =>
    (
      await post(
        base,
        "/v1/chat/completions",
        CLIENT,
        { model: "m", messages: [] },
        { "x-session-id": session, ...(parent ? { "x-parent-session-id": parent } : {}) },
      )
    ).status;

  /** Milliseconds until `check` holds, polling every 20 ms; throws after `timeoutMs`. */
  async function msUntil(check: () => Promise<boolean>, timeoutMs = 5000): Promise<number> {
    const t0 = Date.now();
    while (!(await check())) {
      if (Date.now() - t0 > timeoutMs) throw new Error(`not within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return Date.now() - t0;
  }

  it("the migrations ran once for both replicas", async () => {
    const rows = await db.all<{ version: number; n: number }>(
      "SELECT version, COUNT(*) AS n FROM schema_migrations GROUP BY version HAVING COUNT(*) > 1",
    );
    expect(rows).toEqual([]);
    const health = await (await fetch(`${replicas.b.url}/health`)).json();
    expect(health).toMatchObject({ ok: true, db_writable: true });
  });

  it("/metrics through the balancer says which replica answered, on every sample", async () => {
    const answered = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const text = await (await fetch(`${lb.url}/metrics`)).text();
      const samples = text.split("\n").filter((l) => l !== "" && !l.startsWith("#"));
      expect(samples.length).toBeGreaterThan(10);
      const ids = new Set(samples.map((l) => /\{replica="([^"]+)"/.exec(l)?.[1]));
      expect(ids.size).toBe(1);
      answered.add([...ids][0] ?? "none");
    }
    expect([...answered].sort()).toEqual(["a", "b"]);
  });

  it("Stop through A: B's gate refuses the tree within 1 s; Resume through A: B lets it through within 1 s", async () => {
    const { a, b } = replicas;
    expect(await chat(b.url, "ses_child", "ses_root")).toBe(200);
    expect((await post(a.url, "/api/trees/ses_root/stop", ADMIN, { by: "ops" })).status).toBe(200);
    const refusedIn = await msUntil(async () => (await chat(b.url, "ses_child")) === 403);
    expect(refusedIn).toBeLessThan(1000);
    expect((await post(a.url, "/api/trees/ses_root/resume", ADMIN, { by: "ops" })).status).toBe(200);
    const passedIn = await msUntil(async () => (await chat(b.url, "ses_child")) === 200);
    expect(passedIn).toBeLessThan(1000);
  });

  it("a knob set through A is B's within 1 s, and so is its reset", async () => {
    const knobOnB = async () => {
      const r = await fetch(`${replicas.b.url}/api/knobs`, { headers: { authorization: `Bearer ${ADMIN}` } });
      const body = (await r.json()) as { knobs: Array<{ path: string; value: unknown }> };
      return body.knobs.find((k) => k.path === "thresholds.top_warn")?.value;
    };
    const before = await knobOnB();
    const put = await fetch(`${replicas.a.url}/api/knobs`, {
      method: "PUT",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
      body: JSON.stringify({ path: "thresholds.top_warn", value: 9 }),
    });
    expect(put.status).toBe(200);
    expect(await msUntil(async () => (await knobOnB()) === 9)).toBeLessThan(1000);
    const reset = await fetch(`${replicas.a.url}/api/knobs/thresholds.top_warn`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(reset.status).toBe(200);
    expect(await msUntil(async () => (await knobOnB()) === before)).toBeLessThan(1000);
  });

  it("a looping transition alerts once, even when it reaches both replicas", async () => {
    const t = transition("ses_loop", null, "build", "stalling", "looping", 1_800_000_000_000, {
      reason: "duplicates",
    });
    expect((await post(lb.url, "/progress", PLUGIN, [t])).status).toBe(200);
    // A retry that lands on the other replica must not alert again.
    for (const r of Object.values(replicas))
      expect((await post(r.url, "/progress", PLUGIN, [t])).status).toBe(200);
    await msUntil(async () => hook.bodies.some((h) => h.dedup_key === "ses_loop"));
    await new Promise((r) => setTimeout(r, 1000));
    expect(hook.bodies.filter((h) => h.dedup_key === "ses_loop")).toHaveLength(1);
  });

  it("a blind watchdog tick, seen by both replicas, alerts once", async () => {
    // A stores the tick and judges it at once; B's blind check (every 2 s) finds the same tick in
    // the shared database. Both raise the same incident; the claim lets one of them send it.
    const tick = { type: "watchdog_tick", at: Date.now(), servers: 1, sessions: 0, flagged: 0, blind: true };
    expect((await post(replicas.a.url, "/progress", PLUGIN, tick)).status).toBe(200);
    await msUntil(async () => hook.bodies.some((h) => h.dedup_key === "watchdog:blind"));
    await new Promise((r) => setTimeout(r, 3000)); // B's blind check has run at least once since
    expect(hook.bodies.filter((h) => h.dedup_key === "watchdog:blind")).toHaveLength(1);
    const claims = await db.all<{ replica: string }>(
      "SELECT replica FROM alert_claims WHERE key LIKE 'watchdog|%'",
    );
    expect(claims).toHaveLength(1);
  });

  it("kill -9 of A during 2,000 posts through the balancer: every one stored once, and B still refuses", async () => {
    expect((await post(lb.url, "/api/trees/ses_held/stop", ADMIN, { by: "ops" })).status).toBe(200);
    expect(await chat(replicas.b.url, "ses_held")).toBe(403);
    // Eight reporters of 250 reports each, one report a POST, retrying as the plugin does.
    const reporters = Array.from(
      { length: 8 },
      () =>
        new Reporter({
          url: lb.url,
          token: PLUGIN,
          timeoutMs: 5000,
          queueSize: 1000,
          batchSize: 1,
          retryMs: 20,
          maxRetryMs: 200,
        }),
    );
    // looping -> stalling keeps an incident open without an alert: 2,000 of them page nobody.
    reporters.forEach((rep, k) => {
      for (let i = 0; i < 250; i++)
        rep.enqueue(transition(`ses_k${k}_${i}`, null, "build", "looping", "stalling", 1e12 + i));
    });
    const sent = () => reporters.reduce((n, r) => n + r.stats.sent, 0);
    await msUntil(async () => sent() >= 400, 60_000);
    replicas.a.proc.proc.kill("SIGKILL");
    await replicas.a.proc.exited;
    const atKill = sent();
    await msUntil(async () => sent() >= 2000, 120_000);
    expect(atKill).toBeLessThan(2000); // the kill landed during the burst
    expect(reporters.reduce((n, r) => n + r.stats.failures, 0)).toBeGreaterThan(0); // and some posts had to be retried
    for (const r of reporters) {
      expect(r.stats).toMatchObject({ sent: 250, dropped: 0, rejected: 0 });
      r.close();
    }
    expect(
      await db.get(
        "SELECT COUNT(*) AS n, COUNT(DISTINCT id) AS d FROM transitions WHERE session_id LIKE 'ses_k%'",
      ),
    ).toEqual({ n: 2000, d: 2000 });
    expect(await chat(replicas.b.url, "ses_held")).toBe(403);
    expect(await chat(lb.url, "ses_held")).toBe(403);
  });
});
