// The secret files: the plugin token, the admin token and the gate's default
// client key, one value a file, 0600 in a 0700 folder under the user's config
// folder. serve creates each one the environment does not hold; the plugin and
// the watchdog read the plugin token from here, opencode reads the client key
// ({file:~/.config/stallguard/client.key} in opencode.json). Pure path
// functions first, then a small fs shell.
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, statSync, writeSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { generateToken } from "./security.ts";

export interface SecretFilePaths {
  dir: string;
  plugin: string;
  admin: string;
  client: string;
}

/** $XDG_CONFIG_HOME/stallguard (default ~/.config/stallguard) and the three files in it. */
export function secretFilePaths(env: NodeJS.ProcessEnv): SecretFilePaths {
  const home = env.HOME?.startsWith("/") ? env.HOME : homedir();
  const base = env.XDG_CONFIG_HOME?.startsWith("/") ? env.XDG_CONFIG_HOME : join(home, ".config");
  const dir = join(base, "stallguard");
  return {
    dir,
    plugin: join(dir, "plugin.token"),
    admin: join(dir, "admin.token"),
    client: join(dir, "client.key"),
  };
}

/** A secret as read from a file or a variable: trimmed, and only printable ASCII (a header value). */
export function secretValue(raw: string | undefined | null): string | null {
  const v = raw?.trim() ?? "";
  return v !== "" && v.length <= 4096 && /^[\x21-\x7e]+$/.test(v) ? v : null;
}

/** The value in a secret file, or null when it is missing, empty or unreadable. Never throws. */
export function readSecretFile(path: string): string | null {
  try {
    return secretValue(readFileSync(path, "utf8"));
  } catch {
    return null;
  }
}

/**
 * Makes a folder this program owns private (0700): created so when missing,
 * tightened when it exists with wider rights.
 */
export function privateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if ((statSync(dir).mode & 0o077) !== 0) chmodSync(dir, 0o700);
}

/** Tightens a file this program owns to 0600 when it is wider. */
export function privateFile(path: string): void {
  if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
}

/**
 * The secret in `path`; when there is none, a fresh one written there (0600,
 * created exclusively, so two starting servers end up with the same value).
 */
export function readOrCreateSecret(path: string): { value: string; created: boolean } {
  privateDir(dirname(path));
  const existing = readSecretFile(path);
  if (existing !== null) {
    privateFile(path);
    return { value: existing, created: false };
  }
  const value = generateToken();
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (err) {
    const raced = (err as NodeJS.ErrnoException).code === "EEXIST" ? readSecretFile(path) : null;
    if (raced !== null) return { value: raced, created: false };
    throw new Error(`cannot create ${path}: ${(err as Error).message}`);
  }
  try {
    writeSync(fd, value);
  } finally {
    closeSync(fd);
  }
  return { value, created: true };
}

/**
 * A secret from the environment variable `name`, else from the file (created
 * when `create`). source says which, for the start-up log (never the value).
 */
export function resolveSecret(
  env: NodeJS.ProcessEnv,
  name: string,
  path: string,
  create: boolean,
): { value: string; source: "env" | "file" | "created" } | null {
  const fromEnv = secretValue(env[name]);
  if (fromEnv !== null) return { value: fromEnv, source: "env" };
  if (!create) {
    const v = readSecretFile(path);
    return v === null ? null : { value: v, source: "file" };
  }
  const r = readOrCreateSecret(path);
  return { value: r.value, source: r.created ? "created" : "file" };
}
