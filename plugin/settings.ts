// The plugin's knobs: the layers every entry point reads
// (shared/config-files.ts: config/config.yaml when the plugin runs from the
// package, then the YAML file named by STALLGUARD_CONFIG instead of
// config/config.local.yaml), then the plugin options from opencode.json as the
// last layer, with the environment on top. Admin overrides live in the
// router's database, which the plugin does not read. A bad layer never stops
// opencode: it is reported and the defaults are used instead.

import { readSecretFile, secretFilePaths } from "../router-ext/server/secret-files.ts";
import {
  ConfigError,
  type ConfigLayer,
  loadConfigLayers,
  packageRoot,
  type ReadText,
  readTextFile,
} from "../shared/config-files.ts";
import {
  type Config,
  configSchema,
  formatConfigIssues,
  type Policy,
  policyFromConfig,
} from "../shared/index.ts";
import { isRec } from "../shared/read.ts";

export interface Settings {
  config: Config;
  policy: Policy;
  /** POST target: {routerUrl}/progress. */
  routerUrl: string;
  /**
   * The plugin token: the environment variable when set, else the plugin.token
   * file serve writes (read again on every call, so a router started after
   * opencode, or one that made a new token, is picked up).
   */
  token: () => string | null;
  timeoutMs: number;
  queueSize: number;
  heartbeatMs: number;
  idleEvictMs: number;
  maxSessions: number;
  toasts: boolean;
  /** The work-tree probe after bash calls that may write: on or off, and its time bound. */
  probe: { enabled: boolean; timeoutMs: number };
}

export interface SettingsInput {
  env: Record<string, string | undefined>;
  /** The plugin options from opencode.json (`["stallguard", {...}]`): a partial config. */
  options?: unknown;
  /** Reads a config file; returns undefined when it cannot be read. Default: the file system. */
  readText?: ReadText;
  /** The package root holding config/; default: found from this module (none for an installed copy). */
  root?: string | null;
}

export interface SettingsResult {
  settings: Settings;
  /** Problems found; the affected layers were ignored. */
  issues: string[];
}

function positiveInt(text: string | undefined): number | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  const n = Number(text);
  return Number.isInteger(n) && n > 0 ? n : undefined;
}

function validUrl(text: string | undefined): string | undefined {
  if (!text) return undefined;
  try {
    const u = new URL(text);
    return u.protocol === "http:" || u.protocol === "https:" ? text.replace(/\/+$/, "") : undefined;
  } catch {
    return undefined;
  }
}

export function loadSettings(input: SettingsInput): SettingsResult {
  const issues: string[] = [];
  let configPath: string | null = input.env.STALLGUARD_CONFIG || null;
  const read = input.readText ?? readTextFile;
  if (configPath && read(configPath) === undefined) {
    issues.push(`STALLGUARD_CONFIG: cannot read ${configPath}`);
    configPath = null;
  }
  const last: ConfigLayer[] =
    isRec(input.options) && Object.keys(input.options).length > 0
      ? [{ source: "plugin options", value: input.options }]
      : [];

  let config = configSchema.parse({});
  try {
    config = loadConfigLayers({
      root: input.root === undefined ? packageRoot() : input.root,
      configPath,
      last,
      read,
    }).config;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    issues.push(`${formatConfigIssues(err.issues)} (using defaults)`);
  }

  const envUrl = input.env.STALLGUARD_URL;
  const url = validUrl(envUrl);
  if (envUrl && !url) issues.push("STALLGUARD_URL: not an http(s) URL (using the configured router_url)");
  const envHeartbeat = input.env.STALLGUARD_HEARTBEAT_MS;
  const heartbeat = positiveInt(envHeartbeat);
  if (envHeartbeat && heartbeat === undefined)
    issues.push("STALLGUARD_HEARTBEAT_MS: not a positive integer (using progress.heartbeat)");
  const envToken = input.env[config.plugin.token_env];
  const tokenFile = secretFilePaths(input.env).plugin;
  const token = () => (envToken ? envToken : readSecretFile(tokenFile));

  return {
    settings: {
      config,
      policy: policyFromConfig(config),
      routerUrl: url ?? config.plugin.router_url.replace(/\/+$/, ""),
      token,
      timeoutMs: config.plugin.timeout,
      queueSize: config.plugin.queue_size,
      heartbeatMs: heartbeat ?? config.progress.heartbeat,
      idleEvictMs: config.plugin.idle_evict,
      maxSessions: config.plugin.max_sessions,
      toasts: config.plugin.toasts,
      probe: {
        enabled: config.plugin.worktree_probe.enabled,
        timeoutMs: config.plugin.worktree_probe.timeout,
      },
    },
    issues,
  };
}
