// The server's three credentials, each from the environment when set, else
// from its 0600 file (router-ext/server/secret-files.ts), created on first
// start: the admin token, the plugin token (POST /progress) and the gate's
// client keys. Named client keys come from their environment variables only.
import { homedir } from "node:os";
import type { Config } from "../../shared/index.ts";
import type { ClientKey } from "../gate/client-keys.ts";
import { resolveSecret, type SecretFilePaths, secretFilePaths, secretValue } from "./secret-files.ts";

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

/** Reads (and where needed creates) every credential serve uses. Throws naming a configured key variable that is unset. */
export function loadCredentials(
  cfg: Config,
  env: NodeJS.ProcessEnv,
  paths: SecretFilePaths = secretFilePaths(env),
): Credentials {
  const lines: string[] = [];
  const admin = resolveSecret(env, "STALLGUARD_ADMIN_TOKEN", paths.admin, true);
  const plugin = resolveSecret(env, cfg.plugin.token_env, paths.plugin, true);
  if (!admin || !plugin) throw new Error("cannot read or create the token files");
  const said = (what: string, r: { source: string }, path: string, envName: string) =>
    r.source === "env"
      ? `${what}: from $${envName}`
      : `${what}: ${r.source === "created" ? "created" : "read from"} ${path} (0600)`;
  lines.push(said("admin token", admin, paths.admin, "STALLGUARD_ADMIN_TOKEN"));
  lines.push(said("plugin token", plugin, paths.plugin, cfg.plugin.token_env));

  let clientKeys: ClientKey[];
  let clientKeyHint: string;
  if (cfg.server.client_keys.length > 0) {
    const missing = cfg.server.client_keys.filter((k) => secretValue(env[k.key_env]) === null);
    if (missing.length > 0)
      throw new Error(
        `server.client_keys: ${missing.map((k) => `${k.name} needs $${k.key_env}`).join(", ")} (set in the environment)`,
      );
    clientKeys = cfg.server.client_keys.map((k) => ({
      name: k.name,
      key: secretValue(env[k.key_env]) as string,
    }));
    const vars = cfg.server.client_keys.map((k) => `"{env:${k.key_env}}"`).join(" or ");
    clientKeyHint = `one of the keys in server.client_keys, e.g. ${vars}`;
    lines.push(
      `gate client keys: ${cfg.server.client_keys.map((k) => `${k.name} ($${k.key_env})`).join(", ")}`,
    );
  } else {
    const key = resolveSecret(env, CLIENT_KEY_ENV, paths.client, true);
    if (!key) throw new Error("cannot read or create the client key file");
    clientKeys = [{ name: "default", key: key.value }];
    const file = tildePath(paths.client, env);
    clientKeyHint =
      key.source === "env"
        ? `"{env:${CLIENT_KEY_ENV}}"`
        : `"{file:${file}}" (the key stallguard serve wrote there) or "{env:${CLIENT_KEY_ENV}}"`;
    lines.push(said("gate client key (default)", key, paths.client, CLIENT_KEY_ENV));
  }
  return { adminToken: admin.value, pluginToken: plugin.value, clientKeys, clientKeyHint, lines };
}
