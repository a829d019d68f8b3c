// Reads the config files the layers of shared/config-layers.ts name, and
// finds the package root that holds config/. The composing itself is the
// core's; this is only where the text comes from.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type ComposedConfig,
  ConfigError,
  type ConfigLayer,
  composeConfig,
  type Override,
} from "../shared/index.ts";

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
