// `stallguard` on PATH after `npm install -g` of the clone (into a temp
// prefix, offline: nothing may come from a registry): the bin runs from any
// folder and finds its config/ defaults and dist/ (doctor loads the config,
// install-plugin finds the bundle), and `npx stallguard` then resolves to the
// installed copy without asking the registry.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { REPO } from "../helpers/opencode.ts";

const VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;

describe("stallguard on PATH (npm install -g of the clone)", () => {
  let tmp: string;
  let prefix: string;
  let elsewhere: string;
  let home: string;
  const env = (over: Record<string, string> = {}) => ({
    PATH: `${join(prefix, "bin")}:${process.env.PATH ?? "/usr/bin:/bin"}`,
    HOME: home,
    npm_config_cache: join(tmp, "npm-cache"),
    npm_config_prefix: prefix,
    npm_config_update_notifier: "false",
    ...over,
  });
  const sh = (cmd: string, args: string[], cwd: string) => {
    const r = spawnSync(cmd, args, { cwd, env: env(), encoding: "utf8", timeout: 120_000 });
    return { code: r.status, out: `${r.stdout ?? ""}${r.stderr ?? ""}`, stdout: r.stdout ?? "" };
  };

  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), "sg-on-path-"));
    prefix = join(tmp, "prefix");
    elsewhere = join(tmp, "some-project");
    home = join(tmp, "home");
    mkdirSync(elsewhere, { recursive: true });
    mkdirSync(home, { recursive: true });
    // dist/ is built by the e2e global setup (as `npm install` does through prepare).
    const r = sh(
      "npm",
      ["install", "-g", "--offline", "--ignore-scripts", "--no-audit", "--no-fund", REPO],
      elsewhere,
    );
    expect(r.code, r.out).toBe(0);
  }, 180_000);
  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("the bin is on PATH and answers from another folder", () => {
    expect(existsSync(join(prefix, "bin", "stallguard"))).toBe(true);
    expect(realpathSync(join(prefix, "bin", "stallguard"))).toBe(
      realpathSync(join(REPO, "dist", "stallguard.mjs")),
    );
    const v = sh("stallguard", ["--version"], elsewhere);
    expect(v.code, v.out).toBe(0);
    expect(v.stdout.trim()).toBe(VERSION);
    const help = sh("stallguard", ["doctor", "--help"], elsewhere);
    expect(help.code, help.out).toBe(0);
    expect(help.out).toContain("stallguard doctor");
  });

  test("from another folder it finds its config defaults and its dist (doctor, install-plugin)", () => {
    const d = sh("stallguard", ["doctor", "--json", "--router", "http://127.0.0.1:9"], elsewhere);
    // 1: links are broken in this empty home; 2 would be a config it could not load.
    expect(d.code, d.out).toBe(1);
    const doc = JSON.parse(d.stdout) as { mode: string; checks: Array<{ id: string; detail: string }> };
    expect(doc.mode).toBe("warn");
    expect(doc.checks.find((c) => c.id === "plugin")?.detail).toContain(
      join(elsewhere, ".opencode", "plugins"),
    );
    const install = sh("stallguard", ["install-plugin"], elsewhere);
    expect(install.code, install.out).toBe(0);
    expect(install.out).toContain(
      `installed stallguard plugin ${VERSION} to ${join(home, ".config", "opencode", "plugins", "stallguard.js")}`,
    );
  });

  test("npx stallguard resolves to the installed copy, offline (the registry is never asked)", () => {
    const r = sh("npx", ["--offline", "stallguard", "--version"], elsewhere);
    expect(r.code, r.out).toBe(0);
    expect(r.stdout.trim()).toBe(VERSION);
  });
});
