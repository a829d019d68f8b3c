// Where stallguard's secret files live (the contract between issues 13 and 15):
// $XDG_CONFIG_HOME/stallguard (default ~/.config/stallguard), one value per
// 0600 file. Issue 13 owns reading and creating them; this is the pure path
// function `stallguard doctor` checks.
import { homedir } from "node:os";
import { join } from "node:path";

export interface SecretFilePaths {
  dir: string;
  /** The credential for POST /progress and the plugin's and watchdog's router calls. */
  plugin: string;
  /** The admin page and /api credential. */
  admin: string;
  /** The gate's default client key (the opencode provider's apiKey). */
  client: string;
}

/** The secret files for this environment. */
export function secretFilePaths(env: NodeJS.ProcessEnv): SecretFilePaths {
  const xdg = env.XDG_CONFIG_HOME;
  const base = xdg?.startsWith("/") ? xdg : join(env.HOME || homedir(), ".config");
  const dir = join(base, "stallguard");
  return {
    dir,
    plugin: join(dir, "plugin.token"),
    admin: join(dir, "admin.token"),
    client: join(dir, "client.key"),
  };
}
