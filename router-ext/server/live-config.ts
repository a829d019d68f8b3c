// The running configuration: the layers of shared/config-layers.ts (config.yaml,
// config.local.yaml or the --config file, the admin overrides stored in the
// database, then the command-line flags), with the admin overrides changed
// live. Every change is validated by exactly the schema the files are.
import { dirname, join } from "node:path";
import { packageRoot, readConfigFiles } from "../../io/config-files.ts";
import {
  buildConfig,
  type Config,
  ConfigError,
  type ConfigIssue,
  type ConfigLayer,
  composeConfig,
  type Override,
} from "../../shared/index.ts";

export type { Override };
export { ConfigError };

/** The package's config/ directory, or null outside the package. */
export function findConfigDir(from?: string): string | null {
  const root = packageRoot(from);
  return root ? join(root, "config") : null;
}

/** The file layers: config.yaml, then config.local.yaml or `configPath` instead of it. */
export function readFileLayers(opts: {
  configDir: string | null;
  configPath?: string | undefined;
}): ConfigLayer[] {
  return readConfigFiles({
    root: opts.configDir ? dirname(opts.configDir) : null,
    configPath: opts.configPath,
  });
}

export interface Flags {
  port?: number | undefined;
  host?: string | undefined;
  db?: string | undefined;
  upstream?: string | undefined;
}

/** The command-line flags as the last layer (none when no flag is given). */
export function flagsLayer(flags: Flags): ConfigLayer[] {
  const server: Record<string, unknown> = {};
  if (flags.port !== undefined) server.port = flags.port;
  if (flags.host !== undefined) server.host = flags.host;
  if (flags.db !== undefined) server.db = flags.db;
  if (flags.upstream !== undefined) server.upstream = flags.upstream;
  return Object.keys(server).length > 0 ? [{ source: "flags", value: { server } }] : [];
}

export interface LiveConfigInit {
  fileLayers: ConfigLayer[];
  flags: Flags;
  overrides: readonly Override[];
  log?: (line: string) => void;
}

type Result = { ok: true; config: Config } | { ok: false; issues: ConfigIssue[] };

/**
 * Holds the current config and applies admin overrides live.
 *
 * @example
 * const live = LiveConfig.create({ fileLayers, flags: { port: 0 }, overrides: [] });
 * const r = live.trySet("thresholds.dup_warn", 0.5);
 * if (r.ok) live.get().thresholds.dup_warn; // 0.5
 */
export class LiveConfig {
  private readonly listeners = new Set<(next: Config, prev: Config, path: string) => void>();

  private constructor(
    private readonly fileLayers: ConfigLayer[],
    private readonly last: ConfigLayer[],
    private config: Config,
    private overrides: Map<string, unknown>,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * Validates the layers; a bad file layer or flag throws ConfigError. A stored
   * override that no longer validates (the files changed under it) is skipped
   * and logged rather than blocking start-up.
   */
  static create(init: LiveConfigInit): LiveConfig {
    const last = flagsLayer(init.flags);
    const { config, overrides } = composeConfig(init.fileLayers, init.overrides, last, init.log);
    return new LiveConfig(init.fileLayers, last, config, overrides, init.log ?? (() => {}));
  }

  get(): Config {
    return this.config;
  }

  overriddenPaths(): Set<string> {
    return new Set(this.overrides.keys());
  }

  /** Validates the config with `path` set to `value`; on success it becomes current and listeners run. */
  trySet(path: string, value: unknown): Result {
    return this.apply(new Map(this.overrides).set(path, value), path);
  }

  /** Validates the config with `path` set to `value` without applying it. */
  check(path: string, value: unknown): Result {
    return buildConfig(this.fileLayers, new Map(this.overrides).set(path, value), this.last);
  }

  /** Drops the override at `path` (back to the files' value). */
  tryReset(path: string): Result {
    const next = new Map(this.overrides);
    next.delete(path);
    return this.apply(next, path);
  }

  private apply(next: Map<string, unknown>, path: string): Result {
    const r = buildConfig(this.fileLayers, next, this.last);
    if (!r.ok) return r;
    const prev = this.config;
    this.config = r.config;
    this.overrides = next;
    for (const fn of this.listeners) {
      try {
        fn(r.config, prev, path);
      } catch (err) {
        this.log(`config listener failed after changing ${path}: ${(err as Error).message}`);
      }
    }
    return r;
  }

  /**
   * Takes the overrides as the database holds them now (another replica set
   * or reset one), path by path, so listeners see each change as if it were
   * made here. A value that does not validate is skipped and logged. Returns
   * the paths that changed.
   */
  syncOverrides(stored: readonly Override[]): string[] {
    const next = new Map(stored.map((o) => [o.path, o.value] as const));
    const changed: string[] = [];
    for (const path of new Set([...this.overrides.keys(), ...next.keys()])) {
      const value = next.get(path);
      if (next.has(path) && JSON.stringify(value) === JSON.stringify(this.overrides.get(path))) continue;
      const r = next.has(path) ? this.trySet(path, value) : this.tryReset(path);
      if (r.ok) changed.push(path);
      else this.log(`knob ${path} from another replica does not validate here; kept the current value`);
    }
    return changed;
  }

  /** Runs `fn` after every successful change. Returns an unsubscribe function. */
  subscribe(fn: (next: Config, prev: Config, path: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
