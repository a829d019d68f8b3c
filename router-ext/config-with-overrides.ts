// The config as the router's commands that run without a store (the
// watchdog's timer ticks, calibrate) see it: io/config-files.ts
// loadConfigLayers with the admin overrides stored in the router's SQLite
// file (server.db, else the default path), read-only, so a knob changed in the
// admin page reaches them too; serve reads them through its open store
// (RouterStore.knobOverrides). A database that does not exist yet is simply
// no overrides; one that cannot be read is logged.
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import { type LoadedConfig, loadConfigLayers } from "../io/config-files.ts";
import type { Config, ConfigLayer, Override } from "../shared/index.ts";
import { checkDbTarget } from "./db/db-target.ts";
import { defaultDbPath } from "./db/open.ts";

/** The overrides in the database at `path`, read-only (the file is neither created nor migrated). */
export function storedOverrides(path: string | null, log?: (line: string) => void): Override[] {
  if (!path || !existsSync(path)) return [];
  try {
    // Another program's database (server.db pointing at opencode.db) is not opened at all.
    if (checkDbTarget(path) !== "stallguard") return [];
    const db = new Database(path, { readonly: true, fileMustExist: true });
    try {
      const rows = db.prepare("SELECT path, value FROM knob_overrides ORDER BY path").all() as Array<{
        path: string;
        value: string;
      }>;
      return rows.map((r) => ({ path: r.path, value: JSON.parse(r.value) as unknown }));
    } finally {
      db.close();
    }
  } catch (err) {
    log?.(`admin overrides not read from ${path}: ${(err as Error).message}`);
    return [];
  }
}

export interface RouterConfigOptions {
  configPath?: string | null;
  /** The router's database; default: server.db from the files, else the default path. null: none. */
  dbPath?: string | null;
  env?: NodeJS.ProcessEnv;
  root?: string | null;
  last?: readonly ConfigLayer[];
  log?: (line: string) => void;
}

/** The merged config, and the files' (and flags') own without the admin overrides. */
export interface RouterConfig extends LoadedConfig {
  /** What the operator wrote: credentials go only where this config points (watchdog/servers.ts authFor). */
  fileConfig: Config;
}

/** Files, then the stored admin overrides; throws ConfigError for a bad file. */
export function loadRouterConfig(opts: RouterConfigOptions = {}): RouterConfig {
  const files = loadConfigLayers({ root: opts.root, configPath: opts.configPath, last: opts.last });
  const dbPath =
    opts.dbPath === undefined
      ? (files.config.server.db ?? defaultDbPath(opts.env ?? process.env))
      : opts.dbPath;
  const overrides = storedOverrides(dbPath, opts.log);
  if (overrides.length === 0) return { ...files, fileConfig: files.config };
  const merged = loadConfigLayers({
    root: opts.root,
    configPath: opts.configPath,
    last: opts.last,
    overrides,
    log: opts.log,
  });
  return { ...merged, fileConfig: files.config };
}
