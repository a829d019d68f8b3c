// Issue 13's attacks, each against the real server (`startServer`: hono on
// loopback, a real SQLite file, the gate in front of a scripted model): what a
// local process, a web page the user visits, or a DNS-rebinding page could
// send. Each asserts the refusal and that the database is byte for byte what
// it was (every table's rows, read through a second connection).
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { type Hook, startHook } from "../helpers/hook.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { transition } from "../helpers/wire-fixtures.ts";

/** Every row of every table, hashed: equal snapshots mean nothing was written. */
function snapshot(dbPath: string): string {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
      .all() as Array<{ name: string }>;
    const h = createHash("sha256");
    for (const { name } of tables)
      h.update(name).update(JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all()));
    return h.digest("hex");
  } finally {
    db.close();
  }
}

type Raw = { status: number; body: string };

/** A raw HTTP request: any Host, Origin or content type, as a browser or curl could send them. */
function raw(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path,
        headers: { ...headers, ...(body ? { "content-length": String(Buffer.byteLength(body)) } : {}) },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (d: string) => {
          text += d;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const ADMIN = "attack-admin-token";
const EVIL = "http://evil.example";

describe("attacks on stallguard serve (real server, real SQLite file)", () => {
  let dir: string;
  let model: ModelServer;
  let hook: Hook;
  let srv: RunningServer;
  const lines: string[] = [];
  let key: string;
  let host: string;
  const looping = (id: string) =>
    transition(id, null, "build", "ok", "looping", 1_700_000_000_000, {
      reason: "repeat_target",
      report: "forged <!channel> <http://evil.example|click here> \u202egnp.exe",
    });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-attacks-"));
    model = await startModelServer({ script: () => ({ kind: "text", text: "spent" }) });
    hook = await startHook();
    const config = join(dir, "local.yaml");
    writeFileSync(
      config,
      [
        "watchdog: { enabled: false }",
        "progress: { mode: auto_recover }",
        "notifications:",
        "  channels:",
        `    - { name: team, type: webhook, format: slack, url: "${hook.url}", min_severity: info, quiet_window: 0s }`,
        "",
      ].join("\n"),
    );
    srv = await startServer({
      port: 0,
      dbPath: join(dir, "state", "stallguard", "stallguard.db"),
      configPath: config,
      upstream: model.url,
      env: routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN, UPSTREAM_KEY: "sk-upstream" }),
      log: (l) => lines.push(l),
    });
    key = srv.clientKeys[0]?.key ?? "";
    host = new URL(srv.url).host;
  });

  afterAll(async () => {
    await srv?.close();
    await model?.close();
    await hook?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs the attack and asserts its status and that the database did not change. */
  const unchanged = async (attack: () => Promise<Raw>, status: number): Promise<Raw> => {
    const before = snapshot(srv.dbPath);
    const res = await attack();
    expect(res.status, res.body).toBe(status);
    expect(snapshot(srv.dbPath)).toBe(before);
    return res;
  };
  const chatBody = JSON.stringify({ model: "m", messages: [] });
  const JSON_TYPE = { "content-type": "application/json" };
  /** Headers of a genuine reporter (the plugin token) and of a genuine gate client (the client key). */
  const asPlugin = () => ({ ...JSON_TYPE, authorization: `Bearer ${srv.pluginToken}` });
  const asClient = (extra: Record<string, string> = {}) => ({
    ...JSON_TYPE,
    authorization: `Bearer ${key}`,
    ...extra,
  });
  const chat = (headers: Record<string, string>) =>
    raw(srv.url, "POST", "/v1/chat/completions", headers, chatBody);
  const progress = (headers: Record<string, string>, body: string) =>
    raw(srv.url, "POST", "/progress", headers, body);
  const admin = (method: string, path: string, headers: Record<string, string>, body?: string) =>
    raw(srv.url, method, path, { ...JSON_TYPE, authorization: `Bearer ${ADMIN}`, ...headers }, body);
  const health = async () =>
    JSON.parse((await raw(srv.url, "GET", "/health", {})).body) as { pending_writes: number };

  it("1. /v1 without a client key (curl's text/plain POST, or JSON): refused, the upstream never reached", async () => {
    await unchanged(() => chat({ "content-type": "text/plain" }), 415);
    const r = await unchanged(() => chat({ "content-type": "application/json", host }), 401);
    expect(r.body).toContain("client.key");
    await unchanged(() => chat({ "content-type": "application/json", authorization: "Bearer guess" }), 401);
    expect(model.requests).toHaveLength(0);
  });

  it("2. a web page's no-preflight POST to /v1 (foreign Origin, text/plain): 403", async () => {
    await unchanged(
      () => chat({ origin: EVIL, "content-type": "text/plain", "sec-fetch-site": "cross-site" }),
      403,
    );
    expect(model.requests).toHaveLength(0);
  });

  it("3. DNS rebinding (a foreign Host header) on /v1, /progress, /api and /health: 421", async () => {
    const evilHost = `evil.example:${srv.port}`;
    await unchanged(() => chat(asClient({ host: evilHost })), 421);
    await unchanged(
      () => progress({ ...asPlugin(), host: evilHost }, JSON.stringify(looping("ses_rebind"))),
      421,
    );
    await unchanged(
      () => raw(srv.url, "GET", "/api/sessions", { host: evilHost, authorization: `Bearer ${ADMIN}` }),
      421,
    );
    await unchanged(() => raw(srv.url, "GET", "/health", { host: evilHost }), 421);
    expect(model.requests).toHaveLength(0);
  });

  it("4. a forged looping verdict on /progress: no token (no loopback trust), foreign Origin, text/plain", async () => {
    const body = JSON.stringify(looping("ses_victim"));
    await unchanged(() => progress({ "content-type": "application/json" }, body), 401);
    await unchanged(
      () => progress({ "content-type": "application/json", authorization: "Bearer wrong" }, body),
      401,
    );
    await unchanged(() => progress({ origin: EVIL, "content-type": "text/plain" }, body), 403);
    await unchanged(() => progress({ ...asPlugin(), "content-type": "text/plain" }, body), 415);
    // The victim's requests still pass the gate (auto_recover would have refused a real detection).
    expect((await chat(asClient({ "x-session-id": "ses_victim" }))).status).toBe(200);
  });

  it("5. GET /gate/{id} (an <img> tag) and GET /v1/models write nothing: 300 GETs, 0 rows", async () => {
    const before = snapshot(srv.dbPath);
    for (let i = 0; i < 300; i++) {
      const r = await raw(srv.url, "GET", `/gate/ses_img${i}`, {});
      expect(r.status).toBe(200);
    }
    const models = await raw(srv.url, "GET", "/v1/models", {
      authorization: `Bearer ${key}`,
      "x-session-id": "ses_list",
    });
    expect(models.status).not.toBe(401);
    expect(snapshot(srv.dbPath)).toBe(before);
  });

  it("6. ids with NUL, newline, bidi or a lone surrogate: a clear 400", async () => {
    for (const bad of ["ses_a\u0000", "ses_a\n2026-01-01 forged", "ses_\u202egnp.exe", "ses_\ud800"]) {
      const body = JSON.stringify({ ...looping("ses_x"), session_id: bad, root_id: bad });
      const r = await unchanged(() => progress(asPlugin(), body), 400);
      expect(r.body).toContain("opencode's id charset");
    }
    await unchanged(() => raw(srv.url, "GET", "/gate/ses_%E2%80%AE", {}), 400);
    await unchanged(() => admin("POST", "/api/trees/ses_%0Aforged/stop", {}, "{}"), 400);
  });

  it("7. an admin write (Stop) from a foreign Origin, even carrying the token: 403", async () => {
    await unchanged(() => admin("POST", "/api/trees/ses_victim/stop", { origin: EVIL }, "{}"), 403);
    await unchanged(
      () => admin("POST", "/api/trees/ses_victim/stop", { "content-type": "text/plain" }, "{}"),
      415,
    );
  });

  it("8. a catastrophic-backtracking regex knob: 400, nothing stored", async () => {
    const knob = JSON.stringify({ path: "progress.test_commands", value: ["^(a+)+$"] });
    const r = await unchanged(() => admin("PUT", "/api/knobs", {}, knob), 400);
    expect(r.body).toContain("catastrophic backtracking");
  });

  it("9. forged text in a real verdict reaches Slack escaped: no <!channel>, no link, no bidi", async () => {
    const r = await progress(asPlugin(), JSON.stringify(looping("ses_slack")));
    expect(r.status).toBe(200);
    await expect.poll(() => hook.bodies.length, { timeout: 5000 }).toBeGreaterThan(0);
    const text = String((hook.bodies.at(-1) as { text?: unknown }).text);
    expect(text).toContain("&lt;!channel&gt;");
    expect(text).not.toMatch(/<!channel>|<http:|\u202e/);
  });

  it("10. files: database, its folder and the token files are private; no token in the log", () => {
    const mode = (p: string) => statSync(p).mode & 0o777;
    expect(mode(srv.dbPath)).toBe(0o600);
    expect(mode(join(dir, "state", "stallguard"))).toBe(0o700);
    expect(mode(join(dir, "config", "stallguard"))).toBe(0o700);
    for (const f of ["plugin.token", "client.key"])
      expect(mode(join(dir, "config", "stallguard", f)), f).toBe(0o600);
    const log = lines.join("\n");
    expect(log).toContain("plugin.token");
    expect(log).not.toContain(srv.pluginToken);
    expect(log).not.toContain(key);
    expect(log).not.toContain(ADMIN);
  });

  it("11. a write lock held by another process: /health and the gate keep answering, the writes wait and land", async () => {
    const other = new Database(srv.dbPath);
    other.exec("BEGIN IMMEDIATE");
    try {
      const t0 = performance.now();
      expect((await raw(srv.url, "GET", "/health", {})).status).toBe(200);
      expect((await chat(asClient({ "x-session-id": "ses_locked" }))).status).toBe(200);
      // The reporter keeps this one and retries.
      expect((await progress(asPlugin(), JSON.stringify(looping("ses_locked2")))).status).toBe(503);
      expect(performance.now() - t0).toBeLessThan(2000);
      const metrics = await raw(srv.url, "GET", "/metrics", {});
      expect(metrics.body).toMatch(/^stallguard_store_pending_writes [1-9]/m);
      expect((await health()).pending_writes).toBeGreaterThan(0);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    await expect
      .poll(async () => (await health()).pending_writes, {
        timeout: 5000,
      })
      .toBe(0);
    const db = new Database(srv.dbPath, { readonly: true });
    const row = db.prepare("SELECT client FROM requests WHERE session_id = 'ses_locked'").get() as {
      client: string;
    };
    db.close();
    expect(row.client).toBe("default");
  });
});
