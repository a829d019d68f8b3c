import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../shared/index.ts";
import { loadConfigLayers, packageRoot, readConfigFiles } from "./config-files.ts";

const tmp = mkdtempSync(join(tmpdir(), "sg-io-config-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("packageRoot", () => {
  it("is the nearest ancestor whose package.json is named stallguard, past other packages", () => {
    const root = join(tmp, "pkg");
    const inner = join(root, "node_modules", "other", "lib");
    mkdirSync(inner, { recursive: true });
    writeFileSync(join(root, "package.json"), JSON.stringify({ name: "stallguard" }));
    writeFileSync(join(root, "node_modules", "other", "package.json"), JSON.stringify({ name: "other" }));
    expect(packageRoot(inner)).toBe(root);
  });

  it("walks past an unreadable package.json and is null outside the package", () => {
    const lone = join(tmp, "lone", "a");
    mkdirSync(lone, { recursive: true });
    writeFileSync(join(tmp, "lone", "package.json"), "{ not json");
    expect(packageRoot(lone)).toBeNull();
  });

  it("finds this checkout from io/ itself", () => {
    const root = packageRoot();
    expect(root).not.toBeNull();
    expect(readConfigFiles({ root }).map((l) => l.source)).toContain("config/config.yaml");
  });
});

describe("readConfigFiles", () => {
  const files = new Map([
    ["/p/config/config.yaml", "thresholds: { window: 60 }"],
    ["/p/config/config.local.yaml", "thresholds: { window: 40 }"],
    ["/x/mine.yaml", "thresholds: { window: 30 }"],
  ]);
  const read = (path: string) => files.get(path);

  it("reads config.yaml then config.local.yaml", () => {
    expect(readConfigFiles({ root: "/p", read }).map((l) => l.source)).toEqual([
      "config/config.yaml",
      "config/config.local.yaml",
    ]);
  });

  it("reads the named file instead of config.local.yaml", () => {
    expect(readConfigFiles({ root: "/p", configPath: "/x/mine.yaml", read }).map((l) => l.source)).toEqual([
      "config/config.yaml",
      "/x/mine.yaml",
    ]);
  });

  it("refuses an unreadable named file with a ConfigError naming it", () => {
    const run = () => readConfigFiles({ root: "/p", configPath: "/x/missing.yaml", read });
    expect(run).toThrow(ConfigError);
    expect(run).toThrow(/\/x\/missing\.yaml/);
  });
});

describe("loadConfigLayers", () => {
  it("composes files, overrides and last layers in that order, and names the sources", () => {
    const files = new Map([["/p/config/config.yaml", "thresholds: { window: 60, min_calls: 11 }"]]);
    const loaded = loadConfigLayers({
      root: "/p",
      read: (p) => files.get(p),
      overrides: [{ path: "thresholds.window", value: 45 }],
      last: [{ source: "flags", value: { thresholds: { min_calls: 7 } } }],
    });
    expect(loaded.config.thresholds.window).toBe(45);
    expect(loaded.config.thresholds.min_calls).toBe(7);
    expect(loaded.sources).toEqual(["config/config.yaml", "admin overrides", "flags"]);
  });
});
