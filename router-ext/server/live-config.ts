// The running configuration: config/config.yaml, then config.local.yaml (or
// the --config file), then the admin overrides stored in the database, then
// the command-line flags. Every layer goes through the core's parseConfig, so
// an admin change is validated by exactly the schema the files are.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Config, type ConfigIssue, formatConfigIssues, parseConfig } from "../../shared/index.ts";
import { nestPaths } from "./knobs.ts";

type Layer = { source: string; text: string } | { source: string; value: unknown };

/** A config that failed validation; the message carries `source: key.path: problem` lines. */
export class ConfigError extends Error {
  readonly issues: ConfigIssue[];
  constructor(issues: ConfigIssue[]) {
    super(`invalid configuration:\n${formatConfigIssues(issues)}`);
    this.name = "ConfigError";
    this.issues = issues;
  }
}

/** The repo's config/ directory: the first ancestor of this module holding config/config.yaml. */
export function findConfigDir(from: string = dirname(fileURLToPath(import.meta.url))): string | null {
  let dir = from;
  for (;;) {
    if (existsSync(join(dir, "config", "config.yaml"))) return join(dir, "config");
    const up = dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
}

/**
 * The file layers: config.yaml, then config.local.yaml or `configPath` instead of it.
 * A missing config.local.yaml is fine; a missing `configPath` is an error.
 */
export function readFileLayers(opts: { configDir: string | null; configPath?: string | undefined }): Layer[] {
  const layers: Layer[] = [];
  if (opts.configDir) {
    const defaults = join(opts.configDir, "config.yaml");
    if (existsSync(defaults))
      layers.push({ source: "config/config.yaml", text: readFileSync(defaults, "utf8") });
  }
  if (opts.configPath) {
    let text: string;
    try {
      text = readFileSync(opts.configPath, "utf8");
    } catch (err) {
      throw new ConfigError([
        { source: opts.configPath, path: "(file)", message: `cannot read: ${(err as Error).message}` },
      ]);
    }
    layers.push({ source: opts.configPath, text });
  } else if (opts.configDir) {
    const local = join(opts.configDir, "config.local.yaml");
    if (existsSync(local))
      layers.push({ source: "config/config.local.yaml", text: readFileSync(local, "utf8") });
  }
  return layers;
}

export interface Flags {
  port?: number | undefined;
  host?: string | undefined;
  db?: string | undefined;
  upstream?: string | undefined;
}

function flagsLayer(flags: Flags): Layer | null {
  const server: Record<string, unknown> = {};
  if (flags.port !== undefined) server.port = flags.port;
  if (flags.host !== undefined) server.host = flags.host;
  if (flags.db !== undefined) server.db = flags.db;
  if (flags.upstream !== undefined) server.upstream = flags.upstream;
  return Object.keys(server).length > 0 ? { source: "flags", value: { server } } : null;
}

export type Override = { path: string; value: unknown };

export interface LiveConfigInit {
  fileLayers: Layer[];
  flags: Flags;
  overrides: readonly Override[];
  log?: (line: string) => void;
}

/**
 * Holds the current config and applies admin overrides live.
 *
 * @example
 * const live = LiveConfig.create({ fileLayers, flags: { port: 0 }, overrides: [] });
 * const r = live.trySet("thresholds.dup_warn", 0.5);
 * if (r.ok) live.get().thresholds.dup_warn; // 0.5
 */
export class LiveConfig {
  private config: Config;
  private overrides: Map<string, unknown>;
  private readonly listeners = new Set<(next: Config, prev: Config, path: string) => void>();

  private constructor(
    private readonly fileLayers: Layer[],
    private readonly flags: Layer | null,
    config: Config,
    overrides: Map<string, unknown>,
    private readonly log: (line: string) => void,
  ) {
    this.config = config;
    this.overrides = overrides;
  }

  /**
   * Validates the layers; a bad file layer or flag throws ConfigError. A stored
   * override that no longer validates (the files changed under it) is skipped
   * and logged rather than blocking start-up.
   */
  static create(init: LiveConfigInit): LiveConfig {
    const flags = flagsLayer(init.flags);
    const base = parseConfig([...init.fileLayers, ...(flags ? [flags] : [])]);
    if (!base.ok) throw new ConfigError(base.issues);
    const kept = new Map<string, unknown>();
    let config = base.config;
    for (const o of init.overrides) {
      const next = new Map(kept).set(o.path, o.value);
      const r = LiveConfig.build(init.fileLayers, flags, next);
      if (r.ok) {
        kept.set(o.path, o.value);
        config = r.config;
      } else {
        init.log?.(
          `ignoring stored knob override ${o.path}: ${formatConfigIssues(r.issues).replace(/\n/g, "; ")}`,
        );
      }
    }
    return new LiveConfig(init.fileLayers, flags, config, kept, init.log ?? (() => {}));
  }

  private static build(fileLayers: Layer[], flags: Layer | null, overrides: Map<string, unknown>) {
    const layers: Layer[] = [...fileLayers];
    if (overrides.size > 0)
      layers.push({
        source: "admin overrides",
        value: nestPaths([...overrides].map(([path, value]) => ({ path, value }))),
      });
    if (flags) layers.push(flags);
    return parseConfig(layers);
  }

  get(): Config {
    return this.config;
  }

  overriddenPaths(): Set<string> {
    return new Set(this.overrides.keys());
  }

  /** Validates the config with `path` set to `value`; on success it becomes current and listeners run. */
  trySet(path: string, value: unknown): { ok: true; config: Config } | { ok: false; issues: ConfigIssue[] } {
    const next = new Map(this.overrides).set(path, value);
    return this.apply(next, path);
  }

  /** Validates the config with `path` set to `value` without applying it. */
  check(path: string, value: unknown): { ok: true; config: Config } | { ok: false; issues: ConfigIssue[] } {
    return LiveConfig.build(this.fileLayers, this.flags, new Map(this.overrides).set(path, value));
  }

  /** Drops the override at `path` (back to the files' value). */
  tryReset(path: string): { ok: true; config: Config } | { ok: false; issues: ConfigIssue[] } {
    const next = new Map(this.overrides);
    next.delete(path);
    return this.apply(next, path);
  }

  private apply(next: Map<string, unknown>, path: string) {
    const r = LiveConfig.build(this.fileLayers, this.flags, next);
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

  /** Runs `fn` after every successful change. Returns an unsubscribe function. */
  subscribe(fn: (next: Config, prev: Config, path: string) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
