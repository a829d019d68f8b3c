// Issue 13's and issue 23's attacks, each against the real server
// (`startServer`: hono on loopback, a real SQLite file, the gate in front of a
// scripted model; `stallguard serve` as its own process for start-up): what a
// local process, a web page the user visits, or a DNS-rebinding page could
// send. Each asserts the refusal and that the database is byte for byte what
// it was (every table's rows, read through a second connection), or, for what
// is accepted, exactly what was stored.
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateToken } from "../../io/secret-files.ts";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { launchChromium } from "../helpers/admin-browser.ts";
import { type Raw, raw, snapshot, spawnServe, startRecorder } from "../helpers/attack-tools.ts";
import { type Hook, startHook } from "../helpers/hook.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv, tokenFile } from "../helpers/router-env.ts";
import { QUIET_LOCAL_YAML } from "../helpers/test-router.ts";
import { heartbeatSession, transition } from "../helpers/wire-fixtures.ts";

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
    // /health writes the gate's waiting batch first: the earlier tests' records land before the snapshot.
    expect((await health()).pending_writes).toBeGreaterThanOrEqual(0);
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

  // ---- issue 23 ------------------------------------------------------------
  /** A fresh folder under the file's temp dir (removed with it). */
  const tmp = (name: string) => mkdtempSync(join(dir, `${name}-`));
  const rows = <T>(dbPath: string, sql: string): T[] => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  const mode = (p: string) => statSync(p).mode & 0o777;

  it("12. a watchdog.servers URL set from the admin page never receives OPENCODE_SERVER_PASSWORD", async () => {
    const configured = await startRecorder();
    const adminSet = await startRecorder();
    const d = tmp("wd");
    writeFileSync(
      join(d, "local.yaml"),
      `watchdog: { enabled: true, interval: 1s, servers: ["${configured.url}"] }\nnotifications: { channels: [] }\n`,
    );
    const env = routerEnv(d, { STALLGUARD_ADMIN_TOKEN: ADMIN, OPENCODE_SERVER_PASSWORD: "oc-secret" });
    const wd = await startServer({
      port: 0,
      dbPath: join(d, "sg.db"),
      configPath: join(d, "local.yaml"),
      watchdog: true,
      env,
      log: () => {},
    });
    try {
      const knob = JSON.stringify({ path: "watchdog.servers", value: [configured.url, adminSet.url] });
      const put = await raw(
        wd.url,
        "PUT",
        "/api/knobs",
        { ...JSON_TYPE, authorization: `Bearer ${ADMIN}` },
        knob,
      );
      expect(put.status, put.body).toBe(200);
      expect(rows<{ value: string }>(wd.dbPath, "SELECT value FROM knob_overrides")[0]?.value).toContain(
        adminSet.url,
      );
      // The next ticks probe and list both: the admin-set URL is watched, but bare.
      await expect.poll(() => adminSet.seen.length, { timeout: 30_000 }).toBeGreaterThan(1);
      await expect.poll(() => configured.seen.length, { timeout: 30_000 }).toBeGreaterThan(1);
      expect(adminSet.seen.filter((r) => r.authorization !== "")).toEqual([]);
      const basic = `Basic ${Buffer.from("opencode:oc-secret").toString("base64")}`;
      expect(new Set(configured.seen.map((r) => r.authorization))).toEqual(new Set([basic]));
    } finally {
      await wd.close();
      await configured.close();
      await adminSet.close();
    }
  });

  it("13. 2,100 fresh sessions with a valid plugin token push no looping session out of /api/sessions, /metrics or the page", async () => {
    expect((await progress(asPlugin(), JSON.stringify(looping("ses_volume_loop")))).status).toBe(200);
    for (let i = 0; i < 2100; i += 300) {
      const sessions = Array.from({ length: 300 }, (_, j) => heartbeatSession(`ses_fresh_${i + j}`));
      const hb = {
        type: "heartbeat",
        instance_id: "inst-volume",
        plugin_version: "0.1.0",
        at: Date.now(),
        sessions,
      };
      expect((await progress(asPlugin(), JSON.stringify(hb))).status).toBe(200);
    }
    const list = JSON.parse((await admin("GET", "/api/sessions", {})).body);
    const stored = rows<{ n: number }>(srv.dbPath, "SELECT COUNT(*) AS n FROM sessions")[0]?.n ?? 0;
    expect(stored).toBeGreaterThan(2100);
    expect(list).toMatchObject({ total: stored, truncated: true, next_offset: 2000 });
    expect(list.sessions.some((r: { session_id: string }) => r.session_id === "ses_volume_loop")).toBe(true);
    const metrics = await admin("GET", "/metrics", {});
    expect(metrics.body).toMatch(/^stallguard_warning\{session_id="ses_volume_loop",/m);
    // The Sessions view lists the looping tree before every fresh one.
    const context = await launchChromium(join(tmp("chromium"), "profile"));
    try {
      const page = await context.newPage();
      await page.goto(`${srv.url}/admin#token=${ADMIN}`);
      await page.locator('tbody[data-root="ses_volume_loop"]').waitFor({ timeout: 30_000 });
      const order = await page.$$eval("tbody.tree", (els) =>
        els.map((e) => e.getAttribute("data-root") ?? ""),
      );
      expect(order.indexOf("ses_volume_loop")).toBeLessThan(
        order.findIndex((r) => r.startsWith("ses_fresh_")),
      );
    } finally {
      await context.close();
    }
  });

  it("14. /metrics: free text loses CR, NUL and bidi; per-session series only with the admin token", async () => {
    const forged = "read a.ts\r\nstallguard_flagged_sessions 0\u0000\u202egnp.exe";
    const t = { ...looping("ses_metrics_text"), top_target: forged, top_target_count: 9 };
    expect((await progress(asPlugin(), JSON.stringify(t))).status).toBe(200);
    const pub = await unchanged(() => raw(srv.url, "GET", "/metrics", {}), 200);
    expect(pub.body).toMatch(/^stallguard_flagged_sessions [1-9]/m);
    expect(pub.body).not.toMatch(/ses_|session_id=|top_target=|agent=/);
    await unchanged(() => raw(srv.url, "GET", "/metrics", { authorization: "Bearer wrong" }), 401);
    const full = (await unchanged(() => admin("GET", "/metrics", {}), 200)).body;
    expect(full).toContain('top_target="read a.ts\\nstallguard_flagged_sessions 0gnp.exe"');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: asserting control characters are gone
    expect(full).not.toMatch(/[\r\u0000\u202e]/);
    const sample =
      /^(# (HELP|TYPE) .*|[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-z_]+="([^"\\\n]|\\.)*",?)*\})? [-+0-9.eE]+)?$/;
    expect(full.split("\n").filter((l) => !sample.test(l))).toEqual([]);
  });

  it("15. one id rule and one agent rule: /api/sessions/{id} and the gate's x-router-agent obey the wire's", async () => {
    const r = await unchanged(() => admin("GET", "/api/sessions/ses_%E2%80%AEgnp", {}), 400);
    expect(r.body).toContain("opencode's id charset");
    const mark = JSON.stringify({ kind: "false_alarm" });
    await unchanged(() => admin("POST", "/api/sessions/ses%20x/mark", {}, mark), 400);
    const evil = asClient({
      "x-session-id": "ses_agent_attack",
      "x-router-agent": "<img src=x onerror=alert(1)>",
    });
    expect((await chat(evil)).status).toBe(200);
    await expect
      .poll(() => rows(srv.dbPath, "SELECT agent FROM requests WHERE session_id = 'ses_agent_attack'"))
      .toEqual([{ agent: null }]);
    expect(rows(srv.dbPath, "SELECT agent FROM sessions WHERE session_id = 'ses_agent_attack'")).toEqual([
      { agent: null },
    ]);
  });

  /** startServer in `d` with the quiet config and `extra` in the environment; host defaults to loopback. */
  const startIn = (d: string, extra: Record<string, string>, host?: string) => {
    writeFileSync(join(d, "local.yaml"), QUIET_LOCAL_YAML);
    const dbPath = join(d, "sg.db");
    const env = routerEnv(d, extra);
    return startServer({
      port: 0,
      host,
      dbPath,
      configPath: join(d, "local.yaml"),
      env,
      log: (l) => lines.push(l),
    });
  };

  it("16. a weak token beyond loopback, or a token variable set but invalid, stops start-up naming it; nothing written", async () => {
    const d = tmp("tokens");
    const strong = generateToken();
    const refused = async (extra: Record<string, string>, message: string, host?: string) => {
      await expect(startIn(d, extra, host)).rejects.toThrow(message);
      expect(existsSync(join(d, "sg.db"))).toBe(false);
      expect(existsSync(join(d, "config", "stallguard"))).toBe(false);
    };
    await refused(
      { STALLGUARD_ADMIN_TOKEN: "x", STALLGUARD_TOKEN: strong },
      "refusing to bind 0.0.0.0: $STALLGUARD_ADMIN_TOKEN is 1 character(s)",
      "0.0.0.0",
    );
    await refused(
      { STALLGUARD_ADMIN_TOKEN: strong, STALLGUARD_TOKEN: "ab".repeat(20) },
      "$STALLGUARD_TOKEN has only 2 different character(s)",
      "0.0.0.0",
    );
    await refused(
      { STALLGUARD_ADMIN_TOKEN: "two words" },
      "$STALLGUARD_ADMIN_TOKEN is set but is not a valid secret",
    );
    // The command says so and exits 1.
    const cli = spawnServe(
      ["--db", join(d, "sg.db"), "--config", join(d, "local.yaml")],
      routerEnv(d, { STALLGUARD_TOKEN: "a b" }),
    );
    expect(await cli.exited).toBe(1);
    expect(cli.output()).toContain("cannot start: $STALLGUARD_TOKEN is set but is not a valid secret");
    // Strong tokens bind beyond loopback.
    const ok = await startIn(
      d,
      { STALLGUARD_ADMIN_TOKEN: strong, STALLGUARD_TOKEN: generateToken() },
      "0.0.0.0",
    );
    await ok.close();
  });

  it("17. token files: a symlink is refused (its target untouched), an empty one names the fix, a readable one is repaired with a warning", async () => {
    const d = tmp("files");
    const dir = join(d, "config", "stallguard");
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const outside = join(d, "outside.txt");
    writeFileSync(outside, "someone-elses-value-0123456789-abcdef", { mode: 0o644 });
    symlinkSync(outside, join(dir, "plugin.token"));
    await expect(startIn(d, { STALLGUARD_ADMIN_TOKEN: ADMIN })).rejects.toThrow(
      "plugin.token is a symbolic link",
    );
    expect([mode(outside), readFileSync(outside, "utf8")]).toEqual([
      0o644,
      "someone-elses-value-0123456789-abcdef",
    ]);
    rmSync(join(dir, "plugin.token"));
    writeFileSync(join(dir, "plugin.token"), "", { mode: 0o600 });
    await expect(startIn(d, { STALLGUARD_ADMIN_TOKEN: ADMIN })).rejects.toThrow(
      "plugin.token is empty: delete it and start again (a new one is written), or write the token into it",
    );
    expect(existsSync(join(d, "sg.db"))).toBe(false);
    const token = generateToken();
    writeFileSync(join(dir, "plugin.token"), token);
    chmodSync(join(dir, "plugin.token"), 0o644);
    const from = lines.length;
    const s = await startIn(d, { STALLGUARD_ADMIN_TOKEN: ADMIN });
    try {
      expect(s.pluginToken).toBe(token);
      expect(mode(join(dir, "plugin.token"))).toBe(0o600);
      expect(lines.slice(from).join("\n")).toContain(
        "(mode 0600); WARNING: it was mode 0644, readable by others",
      );
      const hb = {
        type: "heartbeat",
        instance_id: "inst-files",
        plugin_version: "0.1.0",
        at: 1,
        sessions: [],
      };
      const r = await raw(
        s.url,
        "POST",
        "/progress",
        { ...JSON_TYPE, authorization: `Bearer ${token}` },
        JSON.stringify(hb),
      );
      expect(r.status, r.body).toBe(200);
    } finally {
      await s.close();
    }
  });

  it("18. 16 servers starting at once on one HOME all agree on every token, and none dies", async () => {
    const d = tmp("race");
    writeFileSync(join(d, "local.yaml"), QUIET_LOCAL_YAML);
    const env = routerEnv(d);
    const starts = Array.from({ length: 16 }, (_, i) =>
      spawnServe(["--db", join(d, `db${i}`, "sg.db"), "--config", join(d, "local.yaml")], env),
    );
    try {
      const urls = await Promise.all(starts.map((p) => p.listening));
      const plugin = tokenFile(d, "plugin");
      const adminToken = tokenFile(d, "admin");
      const client = tokenFile(d, "client");
      for (const url of urls) {
        const hb = {
          type: "heartbeat",
          instance_id: "inst-race",
          plugin_version: "0.1.0",
          at: 1,
          sessions: [],
        };
        const p = await raw(
          url,
          "POST",
          "/progress",
          { ...JSON_TYPE, authorization: `Bearer ${plugin}` },
          JSON.stringify(hb),
        );
        expect(p.status, `${url} ${p.body}`).toBe(200);
        expect(
          (await raw(url, "GET", "/api/sessions", { authorization: `Bearer ${adminToken}` })).status,
        ).toBe(200);
        expect((await raw(url, "GET", "/v1/models", { authorization: `Bearer ${client}` })).status).not.toBe(
          401,
        );
      }
      // One start wrote each file whole (the others read it), and no temporary file is left;
      // router.json (how plugins find a router, rewritten by every start) is one start's, whole.
      for (const what of ["admin token", "plugin token", "gate client key (default)"])
        expect(
          starts.filter((p) => p.output().includes(`${what}: created`)),
          what,
        ).toHaveLength(1);
      expect(readdirSync(join(d, "config", "stallguard")).sort()).toEqual([
        "admin.token",
        "client.key",
        "plugin.token",
        "router.json",
      ]);
      expect(urls).toContain(
        JSON.parse(readFileSync(join(d, "config", "stallguard", "router.json"), "utf8")).url,
      );
    } finally {
      for (const p of starts) p.proc.kill("SIGTERM");
    }
    expect(await Promise.all(starts.map((p) => p.exited))).toEqual(starts.map(() => 0));
  });
});
