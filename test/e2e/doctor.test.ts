// `stallguard doctor` against a real install in a temp home: the real opencode
// binary, the plugin bundle installed by `stallguard install-plugin`, an
// opencode.json whose provider points at a real router (real SQLite, gate in
// front of a scripted upstream), the token files, a real session D-Bus with a
// notification daemon. The good install passes (exit 0); then each broken link
// on its own (plugin missing, plugin stale, router down, wrong provider URL,
// missing or wrong key) gives its own failure line and fix, and exit 1; no
// D-Bus is a warning.
import { mkdirSync, mkdtempSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { run } from "../../router-ext/cli/run.ts";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { testIo } from "../helpers/cli-io.ts";
import { desktopToolsMissing, type SessionBus, startSessionBus } from "../helpers/dbus.ts";
import { freePort } from "../helpers/free-port.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { OPENCODE_BIN, REPO } from "../helpers/opencode.ts";
import { startTestRouter } from "../helpers/test-router.ts";

const ADMIN = "doctor-e2e-admin-token";
const PLUGIN = "doctor-e2e-plugin-token";
const missing = desktopToolsMissing();
if (missing) console.log(`[skip] doctor e2e: ${missing}`);

describe.skipIf(missing !== null)("stallguard doctor on a real install", () => {
  let tmp: string, home: string, project: string, secrets: string;
  let srv: RunningServer, model: ModelServer, bus: SessionBus;
  const pluginFile = () => join(home, ".config", "opencode", "plugins", "stallguard.js");
  const env = (over: NodeJS.ProcessEnv = {}) => ({
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    XDG_CONFIG_HOME: join(home, ".config"),
    XDG_RUNTIME_DIR: join(tmp, "runtime"),
    DBUS_SESSION_BUS_ADDRESS: bus.address,
    ...over,
  });
  const opencodeJson = (baseURL: string, apiKey = "{file:~/.config/stallguard/client.key}") =>
    writeFileSync(
      join(project, "opencode.json"),
      `{
  // the gate in front of the model
  "provider": {
    "stallguard": {
      "npm": "@ai-sdk/openai-compatible",
      "options": { "baseURL": "${baseURL}", "apiKey": "${apiKey}", },
      "models": { "m": {} },
    },
  },
  "model": "stallguard/m",
}
`,
    );

  /** One doctor run: exit code, stdout, and the lines of each check by id. */
  async function doctor(args: string[] = [], over: NodeJS.ProcessEnv = {}) {
    const t = testIo(home, env(over));
    const code = await run(
      ["doctor", "--project", project, "--opencode", OPENCODE_BIN, "--router", srv.url, ...args],
      t.io,
    );
    const out = t.out();
    const line = (id: string) =>
      out.split("\n").find((l) => new RegExp(`^  \\S+\\s+${id.replace(".", "\\.")}\\s`).test(l));
    const fixOf = (id: string) => {
      const lines = out.split("\n");
      const i = lines.indexOf(line(id) ?? "\u0000");
      return /^\s+fix: (.*)$/.exec(lines[i + 1] ?? "")?.[1] ?? null;
    };
    const failed = out
      .split("\n")
      .filter((l) => l.startsWith("  FAIL"))
      .map((l) => l.split(/\s+/)[2]);
    return { code, out, err: t.err(), line, fixOf, failed };
  }

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "sg-doctor-"));
    home = join(tmp, "home");
    project = join(tmp, "project");
    secrets = join(home, ".config", "stallguard");
    mkdirSync(project, { recursive: true });
    mkdirSync(join(tmp, "runtime"), { recursive: true });
    mkdirSync(secrets, { recursive: true, mode: 0o700 });
    const files: Array<[string, string]> = [
      ["plugin.token", PLUGIN],
      ["admin.token", ADMIN],
      ["client.key", "client-key-for-the-gate"],
    ];
    for (const [file, value] of files) writeFileSync(join(secrets, file), value, { mode: 0o600 });
    bus = await startSessionBus();
    model = await startModelServer({ script: () => ({ kind: "text", text: "ok" }) });
    srv = await startTestRouter(tmp, `server:\n  upstream: ${model.url}\nprogress:\n  mode: auto_recover\n`, {
      // The same secret files the doctor reads (never the user's own config folder).
      env: { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_TOKEN: PLUGIN, HOME: home },
    });
    // The watchdog ticked a moment ago (no opencode running).
    const tick = { type: "watchdog_tick", at: Date.now(), servers: 0, sessions: 0, flagged: 0, blind: true };
    const res = await fetch(`${srv.url}/progress`, {
      method: "POST",
      headers: { authorization: `Bearer ${PLUGIN}`, "content-type": "application/json" },
      body: JSON.stringify(tick),
    });
    expect(res.status).toBe(200);
    const install = testIo(home, env());
    const bundle = join(REPO, "dist", "plugin", "stallguard.js");
    expect(await run(["install-plugin", "--from", bundle], install.io), install.err()).toBe(0);
    opencodeJson(`${srv.url}/v1`);
  }, 120_000);

  afterAll(async () => {
    await srv?.close();
    await model?.close();
    await bus?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("a good install: every link the mode needs passes, exit 0; --json says the same", async () => {
    const d = await doctor(["--upstream", "--config", join(tmp, "local.yaml")]);
    expect(d.code, d.out).toBe(0);
    expect(d.out).toMatch(/^stallguard doctor: mode auto_recover, router http:\/\/127\.0\.0\.1:\d+$/m);
    expect(d.line("opencode")).toMatch(/^ {2}ok {4}opencode +opencode 1\.18\.33 /);
    expect(d.line("plugin")).toMatch(
      /ok +plugin +plugin 0\.1\.0 at .*plugins\/stallguard\.js \(global\), same as this stallguard 0\.1\.0 \(the router runs from source: dev\)$/,
    );
    expect(d.line("provider")).toMatch(
      /ok +provider +provider stallguard -> http:\S+\/v1, key from \{file:~\/\.config\/stallguard\/client\.key\}, accepted by the router as client default$/,
    );
    expect(d.line("reporting")).toMatch(
      /ok +reporting +0 plugin\(s\) report; no plugin sends headers without reporting$/,
    );
    expect(d.line("router")).toMatch(
      /ok +router +router dev at http:\S+, database writable, mode auto_recover, 0 plugin\(s\) live$/,
    );
    for (const id of ["plugin.token", "admin.token", "client.key"]) expect(d.line(id)).toMatch(/^ {2}ok /);
    expect(d.line("upstream")).toMatch(/ok +upstream +http:\S+: GET \/models answered 200$/);
    expect(d.line("dbus")).toMatch(/ok +dbus +the session bus answers/);
    expect(d.line("units")).toMatch(/^ {2}warn +units +no systemd user units in /);
    expect(d.line("watchdog")).toMatch(/ok +watchdog +last tick \d+s ago, no opencode running$/);
    expect(d.failed).toEqual([]);
    expect(d.out).toMatch(/everything auto_recover needs works \(1 warning\(s\)\)\n$/);

    const j = await doctor(["--json"]);
    const doc = JSON.parse(j.out) as { ok: boolean; checks: Array<{ id: string; status: string }> };
    expect(doc.ok).toBe(true);
    expect(doc.checks.map((c) => `${c.id}:${c.status}`)).toEqual([
      "opencode:pass",
      "plugin:pass",
      "provider:pass",
      "router:pass",
      "reporting:pass",
      "plugin.token:pass",
      "admin.token:pass",
      "client.key:pass",
      "upstream:skip",
      "dbus:pass",
      "units:warn",
      "watchdog:pass",
    ]);
  });

  test("plugin missing, then stale: its own failure line and fix", async () => {
    unlinkSync(pluginFile());
    const gone = await doctor();
    expect(gone.code).toBe(1);
    expect(gone.failed).toEqual(["plugin"]);
    expect(gone.line("plugin")).toMatch(
      /FAIL +plugin +no stallguard plugin in .*\.config\/opencode\/plugins or .*\.opencode\/plugins$/,
    );
    expect(gone.fixOf("plugin")).toBe("stallguard install-plugin (or --project DIR), then restart opencode");

    mkdirSync(join(home, ".config", "opencode", "plugins"), { recursive: true });
    writeFileSync(
      pluginFile(),
      "// stallguard-plugin 0.0.9\nexport const StallguardPlugin = async () => ({});\n",
    );
    const stale = await doctor();
    expect(stale.code).toBe(1);
    expect(stale.failed).toEqual(["plugin"]);
    expect(stale.line("plugin")).toMatch(
      /FAIL +plugin +plugin 0\.0\.9 at .* \(global\), but this stallguard is 0\.1\.0 \(the router runs from source: dev\)$/,
    );
    expect(stale.fixOf("plugin")).toBe("stallguard install-plugin (or --project DIR), then restart opencode");

    const again = testIo(home, env());
    expect(
      await run(["install-plugin", "--from", join(REPO, "dist", "plugin", "stallguard.js")], again.io),
    ).toBe(0);
    expect(again.out()).toContain("replaced an older copy (0.0.9)");
    expect((await doctor()).code).toBe(0);
  });

  test("router down: its own failure line and fix; the watchdog check waits for it", async () => {
    const down = `http://127.0.0.1:${await freePort()}`;
    const d = await doctor(["--router", down]);
    expect(d.code).toBe(1);
    expect(d.failed).toEqual(["router"]);
    expect(d.line("router")).toBe(`  FAIL  router        router not reachable at ${down}: ECONNREFUSED`);
    expect(d.fixOf("router")).toMatch(
      /^start it: stallguard serve, or systemctl --user start stallguard\.service/,
    );
    expect(d.line("watchdog")).toMatch(/skip +watchdog +needs the router/);
    // The plugin's version cannot be compared with an unreachable router's: said so, not "same".
    expect(d.line("plugin")).toMatch(
      /same as this stallguard 0\.1\.0 \(the router's version is unknown: not reachable\)$/,
    );
  });

  test("wrong provider URL: its own failure line and the snippet to fix it", async () => {
    opencodeJson("http://127.0.0.1:9/v1");
    try {
      const d = await doctor();
      expect(d.code).toBe(1);
      expect(d.failed).toEqual(["provider"]);
      expect(d.line("provider")).toBe(
        `  FAIL  provider      no provider in opencode.json points at the gate ${srv.url}/v1 (found: stallguard -> http://127.0.0.1:9/v1)`,
      );
      expect(d.fixOf("provider")).toContain(`"baseURL": "${srv.url}/v1"`);
    } finally {
      opencodeJson(`${srv.url}/v1`);
    }
  });

  test("missing key: the key file gone (and, in another form, an unset variable)", async () => {
    unlinkSync(join(secrets, "client.key"));
    try {
      const d = await doctor();
      expect(d.code).toBe(1);
      expect(d.failed).toEqual(["provider", "client.key"]);
      expect(d.line("provider")).toMatch(
        /FAIL +provider +provider stallguard's apiKey file .*\/\.config\/stallguard\/client\.key is missing \(opencode refuses to start\)$/,
      );
      expect(d.fixOf("provider")).toBe(
        "start stallguard serve once (it writes the key file), or write the key there with mode 0600",
      );
      expect(d.fixOf("client.key")).toBe(
        "start stallguard serve once (it creates client.key), or set STALLGUARD_CLIENT_KEY",
      );
    } finally {
      writeFileSync(join(secrets, "client.key"), "client-key-for-the-gate", { mode: 0o600 });
    }
    opencodeJson(`${srv.url}/v1`, "{env:STALLGUARD_CLIENT_KEY}");
    try {
      const d = await doctor();
      expect(d.failed).toEqual(["provider"]);
      expect(d.line("provider")).toMatch(
        /apiKey reads \{env:STALLGUARD_CLIENT_KEY\}, which is not set here$/,
      );
      // Set is not enough: the value is asked of the router.
      const wrong = await doctor([], { STALLGUARD_CLIENT_KEY: "set" });
      expect(wrong.line("provider")).toMatch(
        /is not one of the gate's client keys: the router answered 401$/,
      );
      expect((await doctor([], { STALLGUARD_CLIENT_KEY: "client-key-for-the-gate" })).code).toBe(0);
    } finally {
      opencodeJson(`${srv.url}/v1`);
    }
  });

  test("no D-Bus: a warning (an alert channel is optional), with how to turn the channel off; exit 0", async () => {
    const d = await doctor([], { DBUS_SESSION_BUS_ADDRESS: "" });
    expect(d.code, d.out).toBe(0);
    expect(d.failed).toEqual([]);
    expect(d.line("dbus")).toMatch(
      /warn +dbus +DBUS_SESSION_BUS_ADDRESS is not set, so notify-send cannot reach the desktop/,
    );
    expect(d.fixOf("dbus")).toMatch(/^run inside your desktop session, or set DBUS_SESSION_BUS_ADDRESS=/);
    expect(d.fixOf("dbus")).toContain(
      "notifications.channels: [{ name: desktop, type: desktop, enabled: false }] (the key is notifications.channels[].enabled)",
    );
  });

  test("a literal apiKey is checked against the router: a wrong one fails, the right one passes", async () => {
    opencodeJson(`${srv.url}/v1`, "sk-not-the-gate-key");
    try {
      const d = await doctor();
      expect(d.code).toBe(1);
      expect(d.failed, d.out).toEqual(["provider"]);
      expect(d.line("provider")).toMatch(
        /FAIL +provider +provider stallguard's apiKey \(a literal key\) is not one of the gate's client keys: the router answered 401$/,
      );
      opencodeJson(`${srv.url}/v1`, "client-key-for-the-gate");
      const ok = await doctor();
      expect(ok.code, ok.out).toBe(0);
      expect(ok.line("provider")).toMatch(
        /key from a literal key, accepted by the router as client default$/,
      );
    } finally {
      opencodeJson(`${srv.url}/v1`);
    }
  });
});
