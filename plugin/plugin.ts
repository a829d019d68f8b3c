// The opencode plugin: settings from the shared config layers, the one
// stateful Stallguard object, and the hooks that feed it.
import type { Plugin } from "@opencode-ai/plugin";
import { createHooks } from "./hooks/create-hooks.ts";
import { type ClientLike, Stallguard } from "./runtime.ts";
import { loadSettings, type Settings } from "./settings.ts";
import { WorktreeProbe } from "./worktree-probe.ts";

/** Extra time an observation waits for its probe beyond the probe's own bound (spawning git, the queue). */
const PROBE_WAIT_SLACK_MS = 1000;

/** The work-tree probe the settings ask for, or null (switched off, or no directory to probe). */
export function workTreeProbe(settings: Settings, directory: string | undefined): WorktreeProbe | null {
  if (!settings.probe.enabled || !directory) return null;
  return new WorktreeProbe({
    directory,
    timeoutMs: settings.probe.timeoutMs,
    testPatterns: settings.policy.testPatterns,
  });
}

export const StallguardPlugin: Plugin = async (input, options) => {
  const { settings, issues } = loadSettings({ env: process.env, options });
  const sg = new Stallguard({
    settings,
    directory: input.directory ?? null,
    client: input.client as unknown as ClientLike,
    // Bash calls that may write are checked against the work tree, off the tool path.
    probe: workTreeProbe(settings, input.directory),
    probeWaitMs: settings.probe.timeoutMs + PROBE_WAIT_SLACK_MS,
  });
  if (issues.length > 0) sg.log("warn", "config_invalid", issues.join("; "));
  sg.start();
  return createHooks(sg, { client: input.client });
};
