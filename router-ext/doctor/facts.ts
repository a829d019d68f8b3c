// What `stallguard doctor` gathers (gather.ts) and judges (checks.ts): plain
// values only, so every check is a pure function of them. Secrets are never
// here: only whether a variable is set, whether a file reads, and its mode.
import type { Mode } from "../../shared/index.ts";
import type { Health } from "../api/schemas.ts";
import type { ConfigFileFact } from "./opencode-config.ts";
import type { PgStoreFact } from "./pg-facts.ts";

export type FileState = "readable" | "missing" | "unreadable";

export interface SecretFact {
  /** plugin.token, admin.token or client.key. */
  file: string;
  path: string;
  /** The variable that replaces the file, and whether it is set. */
  env: string;
  envSet: boolean;
  state: FileState;
  /** The file's permission bits (0o600 wanted); null when it does not exist. */
  mode: number | null;
}

export interface PluginCopy {
  scope: "global" | "project";
  path: string;
  /** Read from the file's text; null when it names none. */
  version: string | null;
}

/** The gate provider's key, asked of the router itself (GET /gate with it as the bearer token). */
export type KeyCheck =
  | { state: "accepted"; client: string }
  | { state: "refused"; status: number }
  | { state: "unchecked"; why: string };

export interface DoctorFacts {
  now: number;
  /** The mode the checks judge for: the router's live mode, else the config's. */
  mode: Mode;
  routerUrl: string;
  /** Where routerUrl came from ("from --router", "from .../router.json (written by stallguard serve)", ...). */
  routerFrom?: string;
  /** The config file a fix names (this install's config/config.local.yaml, or --config), by its full path. */
  localConfig?: string;
  /** This stallguard's own version (its package), for when the router cannot say. */
  packageVersion?: string;
  /** The provider's key as the router judged it; absent when no provider points at the gate. */
  keyCheck?: KeyCheck;
  /** The version the plugin must match: the router's, or this package's when the router is down or runs from source. */
  expectedVersion: string;
  opencode: { path: string | null; version: string | null; error: string | null };
  /** Where the plugin was looked for, and the copies found. */
  pluginDirs: string[];
  plugins: PluginCopy[];
  opencodeConfig: {
    files: ConfigFileFact[];
    /** The {env:NAME} variables the provider options name, with their values (never printed). */
    env: Record<string, string | undefined>;
    /** The {file:PATH} files they name, resolved. */
    fileRefs: Record<string, FileState>;
    home: string;
  };
  router: { ok: true; health: Health } | { ok: false; error: string };
  secrets: SecretFact[];
  /** null: not asked for (--upstream). */
  upstream: null | { url: string | null; ok: boolean; detail: string };
  /** channels: the names of the enabled desktop channels (the fix names their config key). */
  desktop: { enabled: boolean; problems: string[]; channels?: string[] };
  units: {
    dir: string;
    installed: string[];
    missing: string[];
    /** systemctl --user is-active per installed unit; null when systemctl did not answer. */
    active: Record<string, string> | null;
  };
  watchdog: { enabled: boolean; intervalMs: number };
  /** The router's PostgreSQL store, when --db or server.db is a postgres:// URL; absent on SQLite. */
  pgStore?: PgStoreFact;
}
