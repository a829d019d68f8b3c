import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
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
    expect(settings).toMatchObject({
      routerUrl: "http://127.0.0.1:4870",
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
    expect(settings).toMatchObject({ routerUrl: "http://127.0.0.1:9999", heartbeatMs: 250 });
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
    expect(settings.routerUrl).toBe("http://127.0.0.1:4870");
    expect(settings.policy.thresholds.top_warn).toBe(configSchema.parse({}).thresholds.top_warn);
  });
});
