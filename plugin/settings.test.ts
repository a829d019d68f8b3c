import { describe, expect, it } from "vitest";
import { loadSettings } from "./settings.ts";

describe("loadSettings", () => {
  it("defaults: the router's loopback address, 500 ms, 60 s heartbeat, no token", () => {
    const { settings, issues } = loadSettings({ env: {} });
    expect(issues).toEqual([]);
    expect(settings).toMatchObject({
      routerUrl: "http://127.0.0.1:4870",
      token: null,
      timeoutMs: 500,
      heartbeatMs: 60_000,
      queueSize: 50,
      maxSessions: 500,
      toasts: true,
    });
  });

  it("the environment wins: STALLGUARD_URL, STALLGUARD_TOKEN, STALLGUARD_HEARTBEAT_MS", () => {
    const { settings } = loadSettings({
      env: {
        STALLGUARD_URL: "http://127.0.0.1:9999/",
        STALLGUARD_TOKEN: "t0k",
        STALLGUARD_HEARTBEAT_MS: "250",
      },
    });
    expect(settings).toMatchObject({ routerUrl: "http://127.0.0.1:9999", token: "t0k", heartbeatMs: 250 });
  });

  it("plugin options and a STALLGUARD_CONFIG file are config layers; token_env names the variable", () => {
    const { settings, issues } = loadSettings({
      env: { STALLGUARD_CONFIG: "/cfg.yaml", MY_TOKEN: "abc" },
      readText: () => "plugin:\n  token_env: MY_TOKEN\n  max_sessions: 7\n",
      options: { thresholds: { top_warn: 9 } },
    });
    expect(issues).toEqual([]);
    expect(settings.token).toBe("abc");
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
    expect(settings.policy.thresholds.top_warn).toBe(6);
  });
});
