// The plugin's knobs: the layers every entry point reads
// (shared/config-layers.ts, read by io/config-files.ts: config/config.yaml when the plugin runs from the
// package, then the YAML file named by STALLGUARD_CONFIG instead of
// config/config.local.yaml), then the plugin options from opencode.json as the
// last layer, with the environment on top. Where the router is comes from the
// one rule in io/router-link.ts (serve's router.json when nothing says
// otherwise), read again on every send. Admin overrides live in the
// router's database, which the plugin does not read. A bad layer never stops
// opencode: it is reported and the defaults are used instead.

import { loadConfigLayers, packageRoot, type ReadText, readTextFile } from "../io/config-files.ts";
import {
  httpBase,
  type RouterLink,
  type RouterUrlSource,
  readRouterLink,
  resolveRouterUrl,
  routerLinkPath,
} from "../io/router-link.ts";
import { readSecretFile, secretFilePaths } from "../io/secret-files.ts";
import {
  type Config,
  ConfigError,
  type ConfigLayer,
  configSchema,
  formatConfigIssues,
  isRec,
  type Policy,
  policyFromConfig,
} from "../shared/index.ts";

export interface Settings {
  config: Config;
  policy: Policy;
  /**
   * The router's base URL (POST target {url}/progress), resolved again on every
   * call: STALLGUARD_URL, then plugin.router_url, then the router.json serve
   * writes beside plugin.token (so a router on another port, or started after
   * opencode, is found), then http://127.0.0.1:4870.
   */
  routerUrl: () => { url: string; source: RouterUrlSource };
  /** Where serve's router.json is looked for (named in messages). */
  linkPath: string;
  /**
   * The plugin token: the environment variable when set, else the file serve
   * names in router.json, else plugin.token (read again on every call, so a
   * router started after opencode, or one that made a new token, is picked up).
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
  /** Reads serve's router.json; default the file system. */
  readLink?: (path: string) => RouterLink | null;
  now?: () => number;
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

/** Reads the link file at most once a second (the URL and the token are asked for on every send). */
function cachedLink(
  path: string,
  read: (path: string) => RouterLink | null,
  now: () => number,
): () => RouterLink | null {
  let at = Number.NEGATIVE_INFINITY;
  let link: RouterLink | null = null;
  return () => {
    if (now() - at >= 1000) {
      link = read(path);
      at = now();
    }
    return link;
  };
}

/** The token: the variable, else the file router.json names (or the variable serve read), else plugin.token. */
function tokenReader(
  env: Record<string, string | undefined>,
  tokenEnv: string,
  link: () => RouterLink | null,
): () => string | null {
  const fromEnv = env[tokenEnv];
  const tokenFile = secretFilePaths(env).plugin;
  return () => {
    if (fromEnv) return fromEnv;
    const where = link()?.token;
    if (where && "env" in where) return env[where.env] || readSecretFile(tokenFile);
    return readSecretFile(where?.file ?? tokenFile) ?? readSecretFile(tokenFile);
  };
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
  if (envUrl && !httpBase(envUrl))
    issues.push("STALLGUARD_URL: not an http(s) URL (using plugin.router_url, router.json or the default)");
  const envHeartbeat = input.env.STALLGUARD_HEARTBEAT_MS;
  const heartbeat = positiveInt(envHeartbeat);
  if (envHeartbeat && heartbeat === undefined)
    issues.push("STALLGUARD_HEARTBEAT_MS: not a positive integer (using progress.heartbeat)");
  const linkPath = routerLinkPath(input.env);
  const link = cachedLink(linkPath, input.readLink ?? readRouterLink, input.now ?? Date.now);
  const configured = config.plugin.router_url;

  return {
    settings: {
      config,
      policy: policyFromConfig(config),
      // The link file is read only when neither STALLGUARD_URL nor plugin.router_url decides.
      routerUrl: () =>
        resolveRouterUrl({ envUrl, configured, link: httpBase(envUrl) || configured ? null : link() }),
      linkPath,
      token: tokenReader(input.env, config.plugin.token_env, link),
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
