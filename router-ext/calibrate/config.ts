// Thresholds for calibration come from the same layers as everywhere else
// (shared/config-layers.ts): config/config.yaml, then --config FILE instead of
// config/config.local.yaml, then the admin overrides stored in the router's
// database, so calibration starts from the thresholds the router runs with.
import type { Config } from "../../shared/index.ts";
import { loadRouterConfig } from "../config-with-overrides.ts";

export { packageRoot } from "../../io/config-files.ts";

export interface LoadedConfig {
  config: Config;
  sources: string[];
}

/** Loads the layers; throws a ConfigError whose message lists every issue with its file and key path. */
export function loadConfig(
  opts: {
    configPath?: string | null;
    root?: string | null;
    env?: NodeJS.ProcessEnv;
    dbPath?: string | null;
    log?: (line: string) => void;
  } = {},
): LoadedConfig {
  const loaded = loadRouterConfig({
    configPath: opts.configPath ?? null,
    ...(opts.root !== undefined ? { root: opts.root } : {}),
    ...(opts.env ? { env: opts.env } : {}),
    ...(opts.dbPath !== undefined ? { dbPath: opts.dbPath } : {}),
    ...(opts.log ? { log: opts.log } : {}),
  });
  return { config: loaded.config, sources: loaded.sources };
}
