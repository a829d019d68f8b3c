// The one config loader every entry point uses (serve, watchdog, calibrate,
// the plugin), so a knob means the same everywhere. Layers, later wins:
//   1. config/config.yaml (the defaults) from the package root,
//   2. config/config.local.yaml, or the file named instead of it (--config,
//      STALLGUARD_CONFIG),
//   3. the admin overrides stored in the router's database, where the entry
//      point can read it (a stored override that no longer validates is
//      skipped and logged, never fatal),
//   4. the entry point's own last word: command-line flags, the plugin's options.
// Every layer is validated alone first, so an error names the file it came from.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
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

/**
 * The stallguard package's root: the first ancestor of `from` whose
 * package.json is named stallguard (a checkout, node_modules/stallguard, or
 * above dist/). null for a copy outside the package (an installed plugin file).
 */
export function packageRoot(from: string = dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from;
  for (;;) {
    const pkg = join(dir, "package.json");
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, "utf8")) as { name?: unknown }).name === "stallguard") return dir;
      } catch {
        // An unreadable package.json is not ours: keep walking up.
      }
    }
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/** Reads a file's text; undefined when it cannot be read. */
export type ReadText = (path: string) => string | undefined;

/** Reads a file from the file system. */
export const readTextFile: ReadText = (path) => {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
};

/**
 * Layers 1 and 2: config.yaml, then `configPath` instead of config.local.yaml.
 * A missing config.local.yaml is fine; an unreadable `configPath` is a ConfigError.
 */
export function readConfigFiles(opts: {
  root: string | null;
  configPath?: string | null;
  read?: ReadText;
}): ConfigLayer[] {
  const read = opts.read ?? readTextFile;
  const layers: ConfigLayer[] = [];
  const dir = opts.root ? join(opts.root, "config") : null;
  const defaults = dir ? read(join(dir, "config.yaml")) : undefined;
  if (defaults !== undefined) layers.push({ source: "config/config.yaml", text: defaults });
  if (opts.configPath) {
    const text = read(opts.configPath);
    if (text === undefined)
      throw new ConfigError([{ source: opts.configPath, path: "(file)", message: "cannot read the file" }]);
    layers.push({ source: opts.configPath, text });
  } else if (dir) {
    const local = read(join(dir, "config.local.yaml"));
    if (local !== undefined) layers.push({ source: "config/config.local.yaml", text: local });
  }
  return layers;
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

export interface LoadConfigOptions {
  /** The package root holding config/; default: found from this module. null: no files. */
  root?: string | null;
  /** Used instead of config/config.local.yaml. */
  configPath?: string | null;
  overrides?: readonly Override[];
  /** Layers after the overrides: flags, plugin options. */
  last?: readonly ConfigLayer[];
  read?: ReadText;
  log?: (line: string) => void;
}

export interface LoadedConfig extends ComposedConfig {
  fileLayers: ConfigLayer[];
  last: ConfigLayer[];
  /** Where the config came from, in order (for messages). */
  sources: string[];
}

/**
 * Loads the layers; throws a ConfigError whose message lists every issue
 * with its file and key path.
 *
 * @example
 * const { config } = loadConfigLayers({ configPath: "local.yaml", overrides: store.knobOverrides() });
 */
export function loadConfigLayers(opts: LoadConfigOptions = {}): LoadedConfig {
  const root = opts.root === undefined ? packageRoot() : opts.root;
  const fileLayers = readConfigFiles({ root, configPath: opts.configPath ?? null, read: opts.read });
  const last = [...(opts.last ?? [])];
  const composed = composeConfig(fileLayers, opts.overrides ?? [], last, opts.log);
  const sources = [
    ...fileLayers.map((l) => l.source),
    ...(composed.overrides.size > 0 ? ["admin overrides"] : []),
    ...last.map((l) => l.source),
  ];
  return { ...composed, fileLayers, last, sources };
}
