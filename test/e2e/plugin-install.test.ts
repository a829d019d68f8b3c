// One-command install: `stallguard install-plugin` (the built CLI) into a temp
// HOME and a --project dir, then the real opencode loading the installed copy,
// and the same bundle loaded as an npm-style package entry with options.
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { runOpencode, seedConfigDir } from "../helpers/opencode.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const CLI = join(REPO, "dist", "stallguard.mjs");
const BUNDLE = join(REPO, "dist", "plugin", "stallguard.js");
const VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;

function cli(args: string[], env: Record<string, string>): { code: number; out: string } {
  try {
    const out = execFileSync("node", [CLI, ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    return { code: 0, out };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { code: e.status, out: `${e.stdout}${e.stderr}` };
  }
}

describe("stallguard install-plugin", () => {
  let tmp: string;
  let model: ModelServer;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-install-"));
    model = await startModelServer({ script: () => ({ kind: "text", text: "hello from the model" }) });
  });
  afterAll(async () => {
    await model?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("installs into ~/.config/opencode/plugins, prints the version, reports a replaced older copy", () => {
    const home = join(tmp, "home");
    const target = join(home, ".config", "opencode", "plugins", "stallguard.js");
    const first = cli(["install-plugin"], { HOME: home });
    expect(first.code).toBe(0);
    expect(first.out).toContain(`installed stallguard plugin ${VERSION} to ${target}`);
    const installed = () => readFileSync(target, "utf8");
    expect(installed()).toBe(`// stallguard-plugin ${VERSION}\n${readFileSync(BUNDLE, "utf8")}`);

    expect(cli(["install-plugin"], { HOME: home }).out).toContain(
      `stallguard plugin ${VERSION} is already installed`,
    );

    writeFileSync(
      target,
      'var PLUGIN_VERSION = "0.0.1";\nexport const StallguardPlugin = async () => ({});\n',
    );
    const again = cli(["install-plugin"], { HOME: home });
    expect(again.code).toBe(0);
    expect(again.out).toContain(`replaced an older copy (0.0.1) at ${target}`);
    expect(again.out).toContain(`installed stallguard plugin ${VERSION}`);
    expect(installed().endsWith(readFileSync(BUNDLE, "utf8"))).toBe(true);
  });

  test("--project DIR installs into DIR/.opencode/plugins; a missing bundle is an error", () => {
    const project = join(tmp, "proj");
    mkdirSync(project);
    const r = cli(["install-plugin", "--project", project], { HOME: join(tmp, "nohome") });
    expect(r.code).toBe(0);
    expect(existsSync(join(project, ".opencode", "plugins", "stallguard.js"))).toBe(true);
    expect(existsSync(join(tmp, "nohome"))).toBe(false);
    const bad = cli(["install-plugin", "--from", join(tmp, "nope.js")], { HOME: join(tmp, "h2") });
    expect(bad.code).toBe(1);
    expect(bad.out).toMatch(/no plugin bundle/);
  });

  test("real opencode loads the globally installed copy: headers on its model requests", async () => {
    const home = join(tmp, "home");
    seedConfigDir(join(home, ".config", "opencode"));
    const before = model.requests.length;
    const run = await runOpencode({
      modelUrl: model.url,
      message: "say hi",
      timeoutMs: 90_000,
      // Nothing listens on port 9: the plugin must stay quiet about it.
      env: { HOME: home, XDG_CONFIG_HOME: join(home, ".config"), STALLGUARD_URL: "http://127.0.0.1:9" },
    });
    try {
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("hello from the model");
      const reqs = model.requests.slice(before);
      expect(reqs.length).toBeGreaterThan(0);
      for (const r of reqs) {
        expect(r.headers["x-stallguard-plugin"]).toBe(VERSION);
        expect(r.headers["x-router-conversation"]).toBe(r.sessionId);
      }
    } finally {
      run.cleanup();
    }
  });

  test("works as an npm package entry (package.json exports), with plugin options", async () => {
    const pkg = join(tmp, "pkg");
    mkdirSync(join(pkg, "dist", "plugin"), { recursive: true });
    const manifest = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8"));
    writeFileSync(
      join(pkg, "package.json"),
      JSON.stringify({
        name: manifest.name,
        version: manifest.version,
        type: "module",
        main: manifest.main,
        exports: manifest.exports,
      }),
    );
    cpSync(BUNDLE, join(pkg, manifest.main));
    const before = model.requests.length;
    const run = await runOpencode({
      modelUrl: model.url,
      message: "say hi",
      timeoutMs: 90_000,
      env: { STALLGUARD_URL: "http://127.0.0.1:9" },
      opencodeConfig: { plugin: [[`file://${pkg}`, { plugin: { toasts: false } }]] },
    });
    try {
      expect(run.code).toBe(0);
      const reqs = model.requests.slice(before);
      expect(reqs.length).toBeGreaterThan(0);
      for (const r of reqs) expect(r.headers["x-stallguard-plugin"]).toBe(VERSION);
    } finally {
      run.cleanup();
    }
  });
});
