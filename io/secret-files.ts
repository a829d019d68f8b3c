// The secret files: the plugin token, the admin token and the gate's default
// client key, one value a file, 0600 in a 0700 folder under the user's config
// folder. serve creates each one the environment does not hold; the plugin and
// the watchdog read the plugin token from here, opencode reads the client key
// ({file:~/.config/stallguard/client.key} in opencode.json). Pure path
// functions first, then a small fs shell.
//
// A secret file is opened without following a symbolic link (a link could
// point the chmod, or the read, at a file outside the folder), must be a
// regular file, and is created whole or not at all: written under a temporary
// name in the same folder, then linked into place, so a server starting at the
// same moment reads a complete token or none.
import { randomBytes } from "node:crypto";
import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fstatSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readSync,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";

/** A fresh token (admin, plugin, client key): 32 random bytes, base64url. */
export function generateToken(): string {
  return randomBytes(32).toString("base64url");
}

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

const MAX_SECRET = 4096;
/** What a valid secret is, for error messages. */
export const SECRET_RULE = "printable ASCII without spaces, at most 4096 characters";

/** A secret as read from a file or a variable: trimmed, and only printable ASCII (a header value). */
export function secretValue(raw: string | undefined | null): string | null {
  const v = raw?.trim() ?? "";
  return v !== "" && v.length <= MAX_SECRET && /^[\x21-\x7e]+$/.test(v) ? v : null;
}

/** A secret file as found: missing, a value (mode: its permission bits now, was: before a repair), or why not. */
export type SecretFile =
  | { kind: "missing" }
  | { kind: "ok"; value: string; mode: number; was?: number }
  | { kind: "bad"; problem: string };

const NO_FOLLOW = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Reads a secret file without following a symbolic link. With `repair`, a file
 * others may read is tightened to 0600 through the open descriptor (never a
 * link's target) and `was` keeps the mode it had. Never throws.
 */
export function openSecretFile(path: string, repair: boolean): SecretFile {
  let fd: number;
  try {
    fd = openSync(path, NO_FOLLOW);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return { kind: "missing" };
    if (code === "ELOOP")
      return {
        kind: "bad",
        problem: `${path} is a symbolic link, and stallguard does not follow links to its secrets: replace it with the file itself, or delete it and a new one is written at the next start`,
      };
    return { kind: "bad", problem: `cannot read ${path}: ${(err as Error).message}` };
  }
  try {
    return readOpen(fd, path, repair);
  } catch (err) {
    return { kind: "bad", problem: `cannot read ${path}: ${(err as Error).message}` };
  } finally {
    closeSync(fd);
  }
}

function readOpen(fd: number, path: string, repair: boolean): SecretFile {
  const st = fstatSync(fd);
  if (!st.isFile()) return { kind: "bad", problem: `${path} is not a regular file: delete it` };
  const buf = Buffer.alloc(Math.min(st.size, MAX_SECRET + 64));
  const text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString("utf8");
  if (text.trim() === "")
    return {
      kind: "bad",
      problem: `${path} is empty: delete it and start again (a new one is written), or write the token into it`,
    };
  const value = st.size <= MAX_SECRET + 64 ? secretValue(text) : null;
  if (value === null)
    return { kind: "bad", problem: `${path} does not hold a valid token (${SECRET_RULE}): fix or delete it` };
  const mode = st.mode & 0o777;
  if (!repair || (mode & 0o077) === 0) return { kind: "ok", value, mode };
  fchmodSync(fd, 0o600);
  return { kind: "ok", value, mode: 0o600, was: mode };
}

/** The value in a secret file, or null when it is missing, empty, a link or unreadable. Never throws. */
export function readSecretFile(path: string): string | null {
  const f = openSecretFile(path, false);
  return f.kind === "ok" ? f.value : null;
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

/** What readOrCreateSecret found or made; mode and was as in SecretFile. */
export interface SecretRead {
  value: string;
  created: boolean;
  mode?: number;
  was?: number;
}

/**
 * The secret in `path` (tightened to 0600 when others could read it: `was`
 * says so); when there is none, a fresh one linked into place whole, so two
 * starting servers end up with the same value. Throws naming the file and the
 * fix for a link, an empty file or one without a valid token.
 */
export function readOrCreateSecret(path: string): SecretRead {
  privateDir(dirname(path));
  const found = openSecretFile(path, true);
  if (found.kind === "bad") throw new Error(found.problem);
  if (found.kind === "ok") return { value: found.value, created: false, mode: found.mode, was: found.was };
  const value = generateToken();
  const tmp = join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}`);
  try {
    const fd = openSync(
      tmp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
      0o600,
    );
    try {
      writeSync(fd, value);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    linkSync(tmp, path);
    return { value, created: true, mode: statSync(path).mode & 0o777 };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST")
      throw new Error(`cannot create ${path}: ${(err as Error).message}`);
    // Another start linked its token first: that one is whole, and it is the one.
    const raced = openSecretFile(path, true);
    if (raced.kind === "ok") return { value: raced.value, created: false, mode: raced.mode, was: raced.was };
    throw new Error(raced.kind === "bad" ? raced.problem : `cannot create ${path}: it vanished`);
  } finally {
    try {
      unlinkSync(tmp);
    } catch {
      // Not created, or already gone.
    }
  }
}

/** Where resolveSecret found a secret (never the value), for the start-up log. */
export interface ResolvedSecret {
  value: string;
  source: "env" | "file" | "created";
  mode?: number;
  was?: number;
}

/**
 * A secret from the environment variable `name`, else from the file (created
 * when `create`). A variable that is set (not empty) but holds no valid secret
 * is an error naming it, never a silent fall back to the file.
 */
export function resolveSecret(
  env: NodeJS.ProcessEnv,
  name: string,
  path: string,
  create: boolean,
): ResolvedSecret | null {
  const raw = env[name];
  if (raw !== undefined && raw !== "") {
    const fromEnv = secretValue(raw);
    if (fromEnv === null)
      throw new Error(`$${name} is set but is not a valid secret (${SECRET_RULE}): fix or unset it`);
    return { value: fromEnv, source: "env" };
  }
  if (!create) {
    const f = openSecretFile(path, false);
    if (f.kind === "bad") throw new Error(f.problem);
    return f.kind === "ok" ? { value: f.value, source: "file", mode: f.mode } : null;
  }
  const r = readOrCreateSecret(path);
  return { value: r.value, source: r.created ? "created" : "file", mode: r.mode, was: r.was };
}
