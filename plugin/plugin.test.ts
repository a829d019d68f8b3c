import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { workTreeProbe } from "./plugin.ts";
import { loadSettings } from "./settings.ts";

const home = mkdtempSync(join(tmpdir(), "sg-plugin-"));
const env = { HOME: home, XDG_CONFIG_HOME: join(home, ".config") };
afterAll(() => rmSync(home, { recursive: true, force: true }));

describe("the work-tree probe knob (plugin.worktree_probe)", () => {
  it("is on by default, bounded at 1.5 s", () => {
    const { settings } = loadSettings({ env });
    const probe = workTreeProbe(settings, home);
    expect(probe?.directory).toBe(home);
    expect(probe?.timeoutMs).toBe(1500);
    probe?.close();
  });

  it("takes its bound from the plugin options", () => {
    const { settings, issues } = loadSettings({
      env,
      options: { plugin: { worktree_probe: { timeout: "300ms" } } },
    });
    expect(issues).toEqual([]);
    const probe = workTreeProbe(settings, home);
    expect(probe?.timeoutMs).toBe(300);
    probe?.close();
  });

  it("switched off, or without a directory, there is no probe: bash writes are judged from the command", () => {
    const off = loadSettings({ env, options: { plugin: { worktree_probe: { enabled: false } } } }).settings;
    expect(workTreeProbe(off, home)).toBeNull();
    expect(workTreeProbe(loadSettings({ env }).settings, undefined)).toBeNull();
  });

  it("a bad value is reported and the defaults kept", () => {
    const { settings, issues } = loadSettings({
      env,
      options: { plugin: { worktree_probe: { enabled: "no", x: 1 } } },
    });
    expect(issues.join("\n")).toMatch(/worktree_probe/);
    expect(settings.probe).toEqual({ enabled: true, timeoutMs: 1500 });
  });
});
