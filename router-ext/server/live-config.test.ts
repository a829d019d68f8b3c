import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { ConfigError, findConfigDir, LiveConfig, readFileLayers } from "./live-config.ts";

describe("LiveConfig", () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sg-cfg-"));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("layers config.yaml, the --config file and flags", () => {
    const local = join(dir, "local.yaml");
    writeFileSync(local, "server:\n  port: 5000\nthresholds:\n  dup_warn: 0.3\n");
    const fileLayers = readFileLayers({ configDir: findConfigDir(), configPath: local });
    expect(fileLayers.map((l) => l.source)).toEqual(["config/config.yaml", local]);
    const live = LiveConfig.create({ fileLayers, flags: { port: 0 }, overrides: [] });
    expect(live.get().server.port).toBe(0);
    expect(live.get().thresholds.dup_warn).toBe(0.3);
  });

  it("throws a ConfigError naming the file and key path", () => {
    const local = join(dir, "bad.yaml");
    writeFileSync(local, "thresholds:\n  dup_warn: 7\n");
    const fileLayers = readFileLayers({ configDir: null, configPath: local });
    expect(() => LiveConfig.create({ fileLayers, flags: {}, overrides: [] })).toThrow(ConfigError);
    try {
      LiveConfig.create({ fileLayers, flags: {}, overrides: [] });
    } catch (err) {
      expect((err as Error).message).toContain(`${local}: thresholds.dup_warn:`);
    }
    expect(() => readFileLayers({ configDir: null, configPath: join(dir, "missing.yaml") })).toThrow(
      /cannot read/,
    );
    expect(() => LiveConfig.create({ fileLayers: [], flags: { upstream: "nope" }, overrides: [] })).toThrow(
      /flags: server.upstream/,
    );
  });

  it("validates and applies overrides, skipping stored ones that no longer validate", () => {
    const lines: string[] = [];
    const live = LiveConfig.create({
      fileLayers: [],
      flags: {},
      overrides: [
        { path: "thresholds.dup_warn", value: 0.6 },
        { path: "thresholds.window", value: 3 },
      ],
      log: (l) => lines.push(l),
    });
    expect(live.get().thresholds.dup_warn).toBe(0.6);
    expect(live.get().thresholds.window).toBe(60);
    expect(lines.join("\n")).toContain("ignoring stored knob override thresholds.window");

    const seen: string[] = [];
    live.subscribe((_next, _prev, path) => seen.push(path));
    expect(live.trySet("progress.heartbeat", "2m").ok).toBe(true);
    expect(live.get().progress.heartbeat).toBe(120_000);
    const bad = live.trySet("progress.mode", "panic");
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.issues[0]?.path).toBe("progress.mode");
    expect(live.get().progress.mode).toBe("warn");
    expect(live.tryReset("thresholds.dup_warn").ok).toBe(true);
    expect(live.get().thresholds.dup_warn).toBe(configSchema.parse({}).thresholds.dup_warn);
    expect(seen).toEqual(["progress.heartbeat", "thresholds.dup_warn"]);
  });
});
