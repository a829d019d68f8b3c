// The plugin's knobs: the core's config schema (defaults, then an optional
// YAML file named by STALLGUARD_CONFIG, then the plugin options from
// opencode.json), with the environment on top. A bad layer never stops
// opencode: it is reported and the defaults are used instead.
import {
  type Config,
  configSchema,
  formatConfigIssues,
  type Policy,
  parseConfig,
  policyFromConfig,
} from "../shared/index.ts";
import { isRec } from "../shared/read.ts";

export interface Settings {
  config: Config;
  policy: Policy;
  /** POST target: {routerUrl}/progress. */
  routerUrl: string;
  token: string | null;
  timeoutMs: number;
  queueSize: number;
  heartbeatMs: number;
  idleEvictMs: number;
  maxSessions: number;
  toasts: boolean;
}

export interface SettingsInput {
  env: Record<string, string | undefined>;
  /** The plugin options from opencode.json (`["stallguard", {...}]`): a partial config. */
  options?: unknown;
  /** Reads the STALLGUARD_CONFIG file; returns undefined when it cannot be read. */
  readText?: (path: string) => string | undefined;
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
  const layers: Array<{ source: string; text: string } | { source: string; value: unknown }> = [];
  const file = input.env.STALLGUARD_CONFIG;
  if (file) {
    const text = input.readText?.(file);
    if (text === undefined) issues.push(`STALLGUARD_CONFIG: cannot read ${file}`);
    else layers.push({ source: "STALLGUARD_CONFIG", text });
  }
  if (isRec(input.options) && Object.keys(input.options).length > 0)
    layers.push({ source: "plugin options", value: input.options });

  let config = configSchema.parse({});
  if (layers.length > 0) {
    const r = parseConfig(layers);
    if (r.ok) config = r.config;
    else issues.push(`${formatConfigIssues(r.issues)} (using defaults)`);
  }

  const envUrl = input.env.STALLGUARD_URL;
  const url = validUrl(envUrl);
  if (envUrl && !url) issues.push("STALLGUARD_URL: not an http(s) URL (using the configured router_url)");
  const envHeartbeat = input.env.STALLGUARD_HEARTBEAT_MS;
  const heartbeat = positiveInt(envHeartbeat);
  if (envHeartbeat && heartbeat === undefined)
    issues.push("STALLGUARD_HEARTBEAT_MS: not a positive integer (using progress.heartbeat)");
  const token = input.env[config.plugin.token_env];

  return {
    settings: {
      config,
      policy: policyFromConfig(config),
      routerUrl: url ?? config.plugin.router_url.replace(/\/+$/, ""),
      token: token ? token : null,
      timeoutMs: config.plugin.timeout,
      queueSize: config.plugin.queue_size,
      heartbeatMs: heartbeat ?? config.progress.heartbeat,
      idleEvictMs: config.plugin.idle_evict,
      maxSessions: config.plugin.max_sessions,
      toasts: config.plugin.toasts,
    },
    issues,
  };
}
