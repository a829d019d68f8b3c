import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { writeRouterLink } from "../io/router-link.ts";
import { configSchema } from "../shared/index.ts";
import { loadSettings } from "./settings.ts";

// A config folder of our own: the plugin reads plugin.token from $XDG_CONFIG_HOME/stallguard.
const home = mkdtempSync(join(tmpdir(), "sg-settings-"));
const empty = { HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("loadSettings", () => {
  it("defaults: the router's loopback address, 500 ms, 60 s heartbeat, no token", () => {
    const { settings, issues } = loadSettings({ env: empty });
    expect(issues).toEqual([]);
    expect(settings.routerUrl()).toEqual({ url: "http://127.0.0.1:4870", source: "default" });
    expect(settings).toMatchObject({
      timeoutMs: 500,
      heartbeatMs: 60_000,
      queueSize: 1000,
      maxSessions: 500,
      toasts: true,
    });
    expect(settings.token()).toBeNull();
  });

  it("without STALLGUARD_TOKEN the token is read from plugin.token, also when serve writes it later", () => {
    const { settings } = loadSettings({ env: empty });
    expect(settings.token()).toBeNull();
    mkdirSync(join(home, ".config", "stallguard"), { recursive: true });
    writeFileSync(join(home, ".config", "stallguard", "plugin.token"), "from-the-file\n", { mode: 0o600 });
    expect(settings.token()).toBe("from-the-file");
    expect(loadSettings({ env: { ...empty, STALLGUARD_TOKEN: "env-wins" } }).settings.token()).toBe(
      "env-wins",
    );
  });

  it("the environment wins: STALLGUARD_URL, STALLGUARD_TOKEN, STALLGUARD_HEARTBEAT_MS", () => {
    const { settings } = loadSettings({
      env: {
        STALLGUARD_URL: "http://127.0.0.1:9999/",
        STALLGUARD_TOKEN: "t0k",
        STALLGUARD_HEARTBEAT_MS: "250",
      },
    });
    expect(settings.routerUrl()).toEqual({ url: "http://127.0.0.1:9999", source: "env" });
    expect(settings.heartbeatMs).toBe(250);
    expect(settings.token()).toBe("t0k");
  });

  it("plugin options and a STALLGUARD_CONFIG file are config layers; token_env names the variable", () => {
    const { settings, issues } = loadSettings({
      env: { STALLGUARD_CONFIG: "/cfg.yaml", MY_TOKEN: "abc" },
      readText: () => "plugin:\n  token_env: MY_TOKEN\n  max_sessions: 7\n",
      options: { thresholds: { top_warn: 9 } },
    });
    expect(issues).toEqual([]);
    expect(settings.token()).toBe("abc");
    expect(settings.maxSessions).toBe(7);
    expect(settings.policy.thresholds.top_warn).toBe(9);
  });

  it("a bad layer or bad env is reported and ignored, never thrown", () => {
    const { settings, issues } = loadSettings({
      env: { STALLGUARD_URL: "ftp://x", STALLGUARD_HEARTBEAT_MS: "soon", STALLGUARD_CONFIG: "/missing" },
      options: { thresholds: { top_warn: "many" }, nonsense: 1 },
    });
    expect(issues.join("\n")).toMatch(/STALLGUARD_URL/);
    expect(issues.join("\n")).toMatch(/STALLGUARD_HEARTBEAT_MS/);
    expect(issues.join("\n")).toMatch(/cannot read \/missing/);
    expect(issues.join("\n")).toMatch(/plugin options/);
    expect(settings.routerUrl().url).toBe("http://127.0.0.1:4870");
    expect(settings.policy.thresholds.top_warn).toBe(configSchema.parse({}).thresholds.top_warn);
  });

  it("finds the router serve announced in router.json; STALLGUARD_URL and plugin.router_url go first", () => {
    const dir = mkdtempSync(join(tmpdir(), "sg-settings-link-"));
    try {
      const env = { HOME: dir, XDG_CONFIG_HOME: join(dir, "cfg") };
      let now = 0;
      const { settings } = loadSettings({ env, root: null, now: () => now });
      expect(settings.linkPath).toBe(join(dir, "cfg", "stallguard", "router.json"));
      expect(settings.routerUrl()).toEqual({ url: "http://127.0.0.1:4870", source: "default" });
      const tokenFile = join(dir, "elsewhere.token");
      writeFileSync(tokenFile, "from-the-link\n");
      writeRouterLink(settings.linkPath, {
        url: "http://127.0.0.1:4871",
        token: { file: tokenFile },
        version: "0.1.0",
        pid: 42,
        started_at: 1,
      });
      // Read again on the next send (at most once a second).
      expect(settings.routerUrl().source).toBe("default");
      now = 1000;
      expect(settings.routerUrl()).toEqual({ url: "http://127.0.0.1:4871", source: "link" });
      expect(settings.token()).toBe("from-the-link");
      const configured = loadSettings({
        env,
        root: null,
        options: { plugin: { router_url: "http://10.0.0.2:5000" } },
      });
      expect(configured.settings.routerUrl()).toEqual({ url: "http://10.0.0.2:5000", source: "config" });
      const fromEnv = loadSettings({ env: { ...env, STALLGUARD_URL: "http://127.0.0.1:6000" }, root: null });
      expect(fromEnv.settings.routerUrl()).toEqual({ url: "http://127.0.0.1:6000", source: "env" });
      // A link file that is not valid is ignored, never thrown.
      writeFileSync(settings.linkPath, '{"url": "ftp://x"}');
      expect(loadSettings({ env, root: null }).settings.routerUrl().source).toBe("default");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
