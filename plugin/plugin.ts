// The opencode plugin: settings from the shared config layers, the one
// stateful Stallguard object, and the hooks that feed it.
import type { Plugin } from "@opencode-ai/plugin";
import { createHooks } from "./hooks.ts";
import { loadSettings } from "./settings.ts";
import { type ClientLike, Stallguard } from "./state.ts";
import { WorktreeProbe } from "./worktree-probe.ts";

export const StallguardPlugin: Plugin = async (input, options) => {
  const { settings, issues } = loadSettings({ env: process.env, options });
  const sg = new Stallguard({
    settings,
    directory: input.directory ?? null,
    client: input.client as unknown as ClientLike,
    // Bash calls that may write are checked against the work tree, off the tool path.
    probe: input.directory ? new WorktreeProbe({ directory: input.directory }) : null,
  });
  if (issues.length > 0) sg.log("warn", "config_invalid", issues.join("; "));
  sg.start();
  return createHooks(sg, { client: input.client });
};
