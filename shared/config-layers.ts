// How the config layers compose, the same for every entry point (serve,
// watchdog, calibrate, the plugin), so a knob means the same everywhere.
// Layers, later wins:
//   1. config/config.yaml (the defaults) from the package root,
//   2. config/config.local.yaml, or the file named instead of it (--config,
//      STALLGUARD_CONFIG),
//   3. the admin overrides stored in the router's database, where the entry
//      point can read it (a stored override that no longer validates is
//      skipped and logged, never fatal),
//   4. the entry point's own last word: command-line flags, the plugin's options.
// Every layer is validated alone first, so an error names the file it came from.
// Pure: the shells read the files (io/config-files.ts) and pass their text in.
import {
  type Config,
  type ConfigIssue,
  type ConfigResult,
  formatConfigIssues,
  parseConfig,
} from "./config.ts";
import { isRec } from "./read.ts";

export type ConfigLayer = { source: string; text: string } | { source: string; value: unknown };

/** An admin override: a dotted knob path and its value. */
export interface Override {
  path: string;
  value: unknown;
}

/** A config that failed validation; the message carries `source: key.path: problem` lines. */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(`invalid configuration:\n${formatConfigIssues(issues)}`);
    this.name = "ConfigError";
    this.issues = issues;
  }
}

/** Builds a nested object from dotted-path values: {"a.b": 1} -> {a: {b: 1}}. */
export function nestPaths(entries: ReadonlyArray<Override>): Record<string, unknown> {
  const root: Record<string, unknown> = {};
  for (const { path, value } of entries) {
    const keys = path.split(".");
    let cur = root;
    for (const key of keys.slice(0, -1)) {
      if (!isRec(cur[key])) cur[key] = {};
      cur = cur[key] as Record<string, unknown>;
    }
    cur[keys[keys.length - 1] as string] = value;
  }
  return root;
}

/** The layering rule: files, then the overrides (as one layer), then the last layers. */
export function buildConfig(
  fileLayers: readonly ConfigLayer[],
  overrides: ReadonlyMap<string, unknown>,
  last: readonly ConfigLayer[] = [],
): ConfigResult {
  const layers: ConfigLayer[] = [...fileLayers];
  if (overrides.size > 0)
    layers.push({
      source: "admin overrides",
      value: nestPaths([...overrides].map(([path, value]) => ({ path, value }))),
    });
  return parseConfig([...layers, ...last]);
}

export interface ComposedConfig {
  config: Config;
  /** The overrides that validated, in the order given. */
  overrides: Map<string, unknown>;
}

/**
 * Layers 3 and 4 over the files. Bad files or last layers throw ConfigError;
 * a stored override that no longer validates is skipped and logged.
 */
export function composeConfig(
  fileLayers: readonly ConfigLayer[],
  overrides: readonly Override[],
  last: readonly ConfigLayer[] = [],
  log?: (line: string) => void,
): ComposedConfig {
  const base = buildConfig(fileLayers, new Map(), last);
  if (!base.ok) throw new ConfigError(base.issues);
  const kept = new Map<string, unknown>();
  let config = base.config;
  for (const o of overrides) {
    const r = buildConfig(fileLayers, new Map(kept).set(o.path, o.value), last);
    if (r.ok) {
      kept.set(o.path, o.value);
      config = r.config;
    } else {
      log?.(`ignoring stored knob override ${o.path}: ${formatConfigIssues(r.issues).replace(/\n/g, "; ")}`);
    }
  }
  return { config, overrides: kept };
}
