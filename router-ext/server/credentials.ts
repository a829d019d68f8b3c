// The server's three credentials, each from the environment when set, else
// from its 0600 file (io/secret-files.ts), created on first start: the admin
// token, the plugin token (POST /progress) and the gate's client keys. Named client keys come from their environment variables only.
// Bound beyond loopback, every one of them must be a strong token.
import { homedir } from "node:os";
import {
  type ResolvedSecret,
  resolveSecret,
  SECRET_RULE,
  type SecretFilePaths,
  secretFilePaths,
  secretValue,
} from "../../io/secret-files.ts";
import type { Config } from "../../shared/index.ts";
import type { ClientKey } from "../gate/client-keys.ts";
import { isLoopbackHost, tokenWeakness } from "./security.ts";

export const CLIENT_KEY_ENV = "STALLGUARD_CLIENT_KEY";

export interface Credentials {
  adminToken: string;
  pluginToken: string;
  clientKeys: ClientKey[];
  /** What the gate's 401 tells the user to put in the provider's apiKey. */
  clientKeyHint: string;
  /** Start-up lines naming where each credential came from (file paths, never a value). */
  lines: string[];
}

/** A path under $HOME written with ~, as opencode.json's {file:...} accepts it. */
export function tildePath(path: string, env: NodeJS.ProcessEnv): string {
  const home = env.HOME?.startsWith("/") ? env.HOME : homedir();
  return path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

const octal = (mode: number | undefined) => (mode === undefined ? "?" : mode.toString(8).padStart(4, "0"));

/** The start-up line for one credential: where it came from and the file's real mode; a warning when it was repaired. */
export function sourceLine(what: string, r: ResolvedSecret, path: string, envName: string): string {
  if (r.source === "env") return `${what}: from $${envName}`;
  const line = `${what}: ${r.source === "created" ? "created" : "read from"} ${path} (mode ${octal(r.mode)})`;
  if (r.was === undefined) return line;
  return `${line}; WARNING: it was mode ${octal(r.was)}, readable by others, and is now 0600: anyone who read it has this credential, so delete the file and restart to make a new one`;
}

/** Throws naming the credential's source when `host` reaches beyond loopback and the value is weak. */
function requireStrong(host: string, value: string, source: string): void {
  if (isLoopbackHost(host)) return;
  const weak = tokenWeakness(value);
  if (weak !== null)
    throw new Error(
      `refusing to bind ${host}: ${source} ${weak} (e.g. openssl rand -base64 32, or unset it and let serve write one)`,
    );
}

/** One credential from its variable or file, checked for strength, with its log line. */
function credential(
  host: string,
  env: NodeJS.ProcessEnv,
  what: string,
  envName: string,
  path: string,
): { value: string; line: string; fromEnv: boolean } {
  const r = resolveSecret(env, envName, path, true);
  if (!r) throw new Error(`cannot read or create ${path}`);
  requireStrong(host, r.value, r.source === "env" ? `$${envName}` : path);
  return { value: r.value, line: sourceLine(what, r, path, envName), fromEnv: r.source === "env" };
}

/** The keys of server.client_keys from their variables; throws naming each unset, invalid or weak one. */
function namedClientKeys(cfg: Config, env: NodeJS.ProcessEnv): ClientKey[] {
  const problems: string[] = [];
  const keys = cfg.server.client_keys.map((k) => {
    const raw = env[k.key_env];
    const key = secretValue(raw);
    if (raw === undefined || raw === "")
      problems.push(`${k.name} needs $${k.key_env} (set in the environment)`);
    else if (key === null)
      problems.push(`${k.name}: $${k.key_env} is set but is not a valid key (${SECRET_RULE})`);
    return { name: k.name, key: key ?? "" };
  });
  if (problems.length > 0) throw new Error(`server.client_keys: ${problems.join(", ")}`);
  for (const [i, k] of keys.entries())
    requireStrong(cfg.server.host, k.key, `$${cfg.server.client_keys[i]?.key_env} (client key ${k.name})`);
  return keys;
}

/** Reads (and where needed creates) every credential serve uses. Throws naming a variable or file that is unset, invalid or weak. */
export function loadCredentials(
  cfg: Config,
  env: NodeJS.ProcessEnv,
  paths: SecretFilePaths = secretFilePaths(env),
): Credentials {
  const host = cfg.server.host;
  const admin = credential(host, env, "admin token", "STALLGUARD_ADMIN_TOKEN", paths.admin);
  const plugin = credential(host, env, "plugin token", cfg.plugin.token_env, paths.plugin);
  const lines = [admin.line, plugin.line];

  let clientKeys: ClientKey[];
  let clientKeyHint: string;
  if (cfg.server.client_keys.length > 0) {
    clientKeys = namedClientKeys(cfg, env);
    const vars = cfg.server.client_keys.map((k) => `"{env:${k.key_env}}"`).join(" or ");
    clientKeyHint = `one of the keys in server.client_keys, e.g. ${vars}`;
    lines.push(
      `gate client keys: ${cfg.server.client_keys.map((k) => `${k.name} ($${k.key_env})`).join(", ")}`,
    );
  } else {
    const key = credential(host, env, "gate client key (default)", CLIENT_KEY_ENV, paths.client);
    clientKeys = [{ name: "default", key: key.value }];
    const file = tildePath(paths.client, env);
    clientKeyHint = key.fromEnv
      ? `"{env:${CLIENT_KEY_ENV}}"`
      : `"{file:${file}}" (the key stallguard serve wrote there) or "{env:${CLIENT_KEY_ENV}}"`;
    lines.push(key.line);
  }
  return { adminToken: admin.value, pluginToken: plugin.value, clientKeys, clientKeyHint, lines };
}
