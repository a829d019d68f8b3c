import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  type ConfigIssue,
  configSchema,
  formatConfigIssues,
  mergeLayers,
  parseConfig,
  parseYamlLayer,
  validateConfig,
  watchdogModel,
  watchdogReadOnlyAgents,
} from "../../shared/config.ts";
import { formatDuration, parseDuration } from "../../shared/duration.ts";
import { policyFromConfig, slugAgent } from "../../shared/policy.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const defaultsText = readFileSync(`${ROOT}config/config.yaml`, "utf8");
const defaults = { source: "config/config.yaml", text: defaultsText };

function issues(value: unknown, source = "test"): ConfigIssue[] {
  const r = validateConfig(value, source);
  return r.ok ? [] : r.issues;
}
const paths = (value: unknown) => issues(value).map((i) => i.path);

describe("defaults", () => {
  it("config/config.yaml parses and equals the schema defaults exactly", () => {
    const r = parseConfig([defaults]);
    expect(r.ok, r.ok ? "" : formatConfigIssues(r.issues)).toBe(true);
    if (r.ok) expect(r.config).toEqual(configSchema.parse({}));
  });

  it("config/config.yaml sets every knob explicitly (no key left to a hidden default)", () => {
    const layer = parseYamlLayer(defaultsText, "config.yaml");
    expect(layer.ok).toBe(true);
    if (!layer.ok) return;
    const keys = (o: unknown, prefix = ""): string[] =>
      o && typeof o === "object" && !Array.isArray(o)
        ? Object.entries(o).flatMap(([k, v]) =>
            v && typeof v === "object" && !Array.isArray(v) && Object.keys(v).length
              ? keys(v, `${prefix}${k}.`)
              : [`${prefix}${k}`],
          )
        : [];
    const schemaKeys = keys(configSchema.parse({})).filter((k) => !k.startsWith("notifications.channels"));
    const fileKeys = new Set(keys(layer.value));
    expect(schemaKeys.filter((k) => !fileKeys.has(k))).toEqual([]);
  });

  it("the prototype's window and read-only repeat count stay; the calibrated rest match config.yaml", () => {
    const t = configSchema.parse({}).thresholds;
    expect(t.window).toBe(60);
    expect(t.top_ro_warn).toBe(8);
    // one set of shipped numbers: the schema's defaults are config/config.yaml's thresholds
    const shipped = parseConfig([defaults]);
    expect(shipped.ok && shipped.config.thresholds).toEqual(t);
    const c = configSchema.parse({});
    expect(c.progress.mode).toBe("warn");
    expect(c.progress.max_recoveries).toBe(2);
    expect(c.progress.context_cap).toBe(200_000);
  });

  it("an empty file is an empty layer", () => {
    const r = parseConfig([defaults, { source: "config/config.local.yaml", text: "" }]);
    expect(r.ok).toBe(true);
  });
});

describe("errors carry the dotted key path", () => {
  it("unknown keys are errors at every depth", () => {
    expect(issues({ thresholds: { dup_wran: 0.3 } })).toEqual([
      { source: "test", path: "thresholds.dup_wran", message: "unknown key" },
    ]);
    expect(paths({ bogus: 1 })).toEqual(["bogus"]);
    expect(paths({ progress: { refusal: { status: 429, retry: 5 } } })).toEqual(["progress.refusal.retry"]);
    expect(paths({ notifications: { channels: [{ name: "d", type: "desktop", colour: "red" }] } })).toEqual([
      "notifications.channels[0].colour",
    ]);
  });

  it("bad values fail with their path", () => {
    expect(paths({ thresholds: { dup_warn: 1.5 } })).toEqual(["thresholds.dup_warn"]);
    expect(paths({ thresholds: { window: 5 } })).toEqual(["thresholds.window"]);
    expect(paths({ thresholds: { fail_warn: 2.5 } })).toEqual(["thresholds.fail_warn"]);
    expect(paths({ progress: { mode: "nuke" } })).toEqual(["progress.mode"]);
    expect(paths({ progress: { test_commands: ["(unclosed"] } })).toEqual(["progress.test_commands[0]"]);
    expect(paths({ progress: { read_only_agents: ["Explore Agent"] } })).toEqual([
      "progress.read_only_agents[0]",
    ]);
    expect(paths({ server: { port: 70000 } })).toEqual(["server.port"]);
  });

  it("an unknown channel type fails", () => {
    const p = paths({ notifications: { channels: [{ name: "sms", type: "twilio" }] } });
    expect(p).toEqual(["notifications.channels[0].type"]);
  });

  it("channel names must be unique", () => {
    const r = issues({
      notifications: {
        channels: [
          { name: "a", type: "desktop" },
          { name: "a", type: "desktop" },
        ],
      },
    });
    expect(r.map((i) => i.path)).toEqual(["notifications.channels"]);
  });

  it("format ntfy needs a topic, and only ntfy takes one", () => {
    const ch = (c: Record<string, unknown>) => ({
      notifications: { channels: [{ name: "w", type: "webhook", url_env: "NTFY_URL", ...c }] },
    });
    expect(paths(ch({ format: "ntfy" }))).toEqual(["notifications.channels[0].topic"]);
    expect(paths(ch({ format: "slack", topic: "x" }))).toEqual(["notifications.channels[0].topic"]);
    expect(paths(ch({ format: "ntfy", topic: "stallguard-alerts" }))).toEqual([]);
  });

  it("a literal secret-looking webhook URL fails; naming an env var works", () => {
    const hook = (url: string) => ({ notifications: { channels: [{ name: "w", type: "webhook", url }] } });
    for (const url of [
      "https://hooks.slack.com/services/T000/B000/XXXXXXXXXXXXXXXX",
      "https://user:hunter2@example.com/hook",
      "https://example.com/hook?token=abc",
      "https://ntfy.example.com/alerts?auth=abc",
      "https://discord.com/api/webhooks/123456789012345678/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
      "https://example.com/hook/3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
    ]) {
      const r = issues(hook(url));
      expect(
        r.map((i) => i.path),
        url,
      ).toEqual(["notifications.channels[0].url"]);
      expect(r[0]?.message, url).toMatch(/secret: use url_env/);
    }
    expect(issues(hook("https://ntfy.sh/stallguard-alerts"))).toEqual([]);
    expect(
      issues({ notifications: { channels: [{ name: "w", type: "webhook", url_env: "NTFY_URL" }] } }),
    ).toEqual([]);
    expect(
      paths({ notifications: { channels: [{ name: "w", type: "webhook", url_env: "https://x.example" }] } }),
    ).toEqual(["notifications.channels[0].url_env"]);
    expect(paths({ notifications: { channels: [{ name: "w", type: "webhook" }] } })).toEqual([
      "notifications.channels[0].url",
    ]);
    expect(
      paths({
        notifications: { channels: [{ name: "p", type: "pagerduty", routing_key_env: "R0ut1ngKeyValue" }] },
      }),
    ).toEqual(["notifications.channels[0].routing_key_env"]);
  });

  it("formats issues as `source: path: message`", () => {
    const r = parseConfig([
      defaults,
      { source: "config/config.local.yaml", text: "thresholds:\n  dup_warn: 2\n  typo: 1\n" },
    ]);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const lines = formatConfigIssues(r.issues).split("\n");
    expect(lines).toHaveLength(2);
    expect(lines).toContain("config/config.local.yaml: thresholds.typo: unknown key");
    expect(lines.some((l) => /^config\/config\.local\.yaml: thresholds\.dup_warn: \S/.test(l))).toBe(true);
  });

  it("invalid YAML, duplicate keys and a non-mapping document name the file", () => {
    for (const text of ["a: [1,", "thresholds:\n  window: 60\n  window: 70\n", "- 1\n- 2\n", "just text"]) {
      const r = parseConfig([defaults, { source: "local.yaml", text }]);
      expect(r.ok, text).toBe(false);
      if (!r.ok) expect(r.issues[0]?.source).toBe("local.yaml");
    }
  });
});

describe("durations", () => {
  it("parses seconds, ms, m, h, d to milliseconds", () => {
    expect(parseDuration(90)).toBe(90_000);
    expect(parseDuration(0.5)).toBe(500);
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("90s")).toBe(90_000);
    expect(parseDuration(" 5m ")).toBe(300_000);
    expect(parseDuration("1.5h")).toBe(5_400_000);
    expect(parseDuration("7d")).toBe(604_800_000);
    for (const bad of ["5", "5 minutes", "-1s", "m", "", "1w"])
      expect(parseDuration(bad), bad).toBeUndefined();
    expect(parseDuration(-1)).toBeUndefined();
    expect(parseDuration(Number.POSITIVE_INFINITY)).toBeUndefined();
  });

  it("formats back to the shortest exact knob string", () => {
    for (const s of ["5m", "90s", "1h", "7d", "250ms", "36h"])
      expect(formatDuration(parseDuration(s) as number)).toBe(s);
    expect(formatDuration(1500)).toBe("1500ms");
  });

  it("duration knobs come out of the schema in milliseconds and bad ones fail with their path", () => {
    const c = configSchema.parse({
      watchdog: { interval: "2m", timeout: 3 },
      progress: { recover_window: "1h" },
    });
    expect([c.watchdog.interval, c.watchdog.timeout, c.progress.recover_window]).toEqual([
      120_000, 3000, 3_600_000,
    ]);
    expect(configSchema.parse({}).plugin.timeout).toBe(500);
    expect(paths({ watchdog: { interval: "soon" } })).toEqual(["watchdog.interval"]);
    expect(issues({ watchdog: { interval: "soon" } })[0]?.message).toContain("not a duration");
  });

  it("watchdog.opencode_db: on by default at opencode's own path; a path is absolute; no unknown keys", () => {
    expect(configSchema.parse({}).watchdog.opencode_db).toEqual({ enabled: true, path: null });
    const set = configSchema.parse({
      watchdog: { opencode_db: { enabled: false, path: "/srv/oc/opencode.db" } },
    });
    expect(set.watchdog.opencode_db).toEqual({ enabled: false, path: "/srv/oc/opencode.db" });
    expect(paths({ watchdog: { opencode_db: { path: "opencode.db" } } })).toEqual([
      "watchdog.opencode_db.path",
    ]);
    expect(issues({ watchdog: { opencode_db: { path: "rel/x.db" } } })[0]?.message).toContain(
      "absolute path",
    );
    expect(paths({ watchdog: { opencode_db: { file: "/x.db" } } })).toEqual(["watchdog.opencode_db.file"]);
    expect(paths({ watchdog: { opencode_db: { enabled: "yes" } } })).toEqual([
      "watchdog.opencode_db.enabled",
    ]);
  });
});

describe("layers", () => {
  it("the local layer overrides deeply; arrays replace; the rest keeps the defaults", () => {
    const local = [
      "thresholds:",
      "  dup_warn: 0.3",
      "progress:",
      "  mode: auto_recover",
      "  read_only_agents: [explore]",
      "notifications:",
      "  channels:",
      "    - { name: phone, type: webhook, format: ntfy, url_env: NTFY_URL, topic: t, min_severity: critical }",
    ].join("\n");
    const r = parseConfig([defaults, { source: "config/config.local.yaml", text: local }]);
    expect(r.ok, r.ok ? "" : formatConfigIssues(r.issues)).toBe(true);
    if (!r.ok) return;
    const d = configSchema.parse({});
    expect(r.config.thresholds).toEqual({ ...d.thresholds, dup_warn: 0.3 });
    expect(r.config.progress).toEqual({ ...d.progress, mode: "auto_recover", read_only_agents: ["explore"] });
    expect(r.config.notifications.channels.map((c) => c.name)).toEqual(["phone"]);
    expect(r.config.watchdog).toEqual(d.watchdog);
    expect(watchdogReadOnlyAgents(r.config)).toEqual(["explore"]);
    expect(policyFromConfig(r.config).readOnlyAgents.has("librarian")).toBe(false);
  });

  it("the example local file is valid", () => {
    // Committed beside config.yaml and named in the README: its absence is a failure, not a skip.
    const example = `${ROOT}config/config.local.yaml.example`;
    const r = parseConfig([defaults, { source: "example", text: readFileSync(example, "utf8") }]);
    expect(r.ok, r.ok ? "" : formatConfigIssues(r.issues)).toBe(true);
  });

  it("value layers (admin overrides) merge after the files", () => {
    const r = parseConfig([defaults, { source: "admin", value: { thresholds: { top_warn: 9 } } }]);
    expect(r.ok && r.config.thresholds.top_warn).toBe(9);
    const bad = parseConfig([defaults, { source: "admin", value: { thresholds: { top_warn: "nine" } } }]);
    expect(!bad.ok && bad.issues.map((i) => `${i.source}|${i.path}`)).toEqual(["admin|thresholds.top_warn"]);
  });

  it("mergeLayers deep-merges objects and replaces scalars and arrays", () => {
    expect(mergeLayers({ a: { b: 1, c: [1, 2] }, d: 1 }, { a: { c: [3] }, e: 2 })).toEqual({
      a: { b: 1, c: [3] },
      d: 1,
      e: 2,
    });
    expect(mergeLayers({ a: 1 }, undefined)).toEqual({ a: 1 });
  });

  it("watchdog model and read-only list fall back to verification and progress", () => {
    const c = configSchema.parse({ verification: { model: "m1" } });
    expect(watchdogModel(c)).toBe("m1");
    expect(watchdogModel(configSchema.parse({ watchdog: { model: "m2" } }))).toBe("m2");
    expect(watchdogReadOnlyAgents(c)).toEqual(c.progress.read_only_agents);
  });

  it("policy compiles test patterns and slugs agents", () => {
    const p = policyFromConfig(configSchema.parse({}));
    expect(p.testPatterns.some((re) => re.test("pytest -q"))).toBe(true);
    expect(p.readOnlyAgents.has("explore")).toBe(true);
    expect(slugAgent("Sisyphus Junior!")).toBe("sisyphus-junior");
    expect(slugAgent("")).toBe("unknown");
    expect(slugAgent(undefined)).toBe("unknown");
    expect(slugAgent("x".repeat(100))).toHaveLength(64);
  });
});
