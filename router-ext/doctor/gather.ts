// `stallguard doctor`'s shell: gathers the facts checks.ts judges. It runs
// `opencode --version`, reads the plugin copies and opencode's config files,
// asks the router's /health, looks at the secret files (never their content),
// optionally asks the upstream for its models, tries the session bus and asks
// systemctl about the units. Nothing here decides; nothing is written.
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readFileSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { packageRoot } from "../../io/config-files.ts";
import { describeUrlSource, routerLinkPath, routerUrlFor } from "../../io/router-link.ts";
import { secretFilePaths } from "../../io/secret-files.ts";
import type { Config, Mode } from "../../shared/index.ts";
import { healthSchema } from "../api/schemas.ts";
import { bundleVersion, globalConfigDir } from "../cli/install-plugin.ts";
import { UNIT_FILES } from "../cli/install-units.ts";
import { VERSION } from "../cli/version.ts";
import { checkCommand, checkSessionBus } from "../notify/diagnostics.ts";
import { isPgUrl } from "../store/pg-target.ts";
import { sessionBusEnv } from "../watchdog/desktop.ts";
import { userUnitDir } from "../watchdog/loop.ts";
import type { DoctorFacts, FileState, KeyCheck, PluginCopy, SecretFact } from "./facts.ts";
import { parseJsonc } from "./jsonc.ts";
import {
  type ConfigFileFact,
  gateProvider,
  keyForm,
  referencesIn,
  resolveFileRef,
} from "./opencode-config.ts";
import { gatherPgStore } from "./pg-gather.ts";

export interface GatherOptions {
  config: Config;
  /** --config FILE, the file used instead of config/config.local.yaml; default that file of this install. */
  configPath?: string | null;
  env: NodeJS.ProcessEnv;
  now: number;
  /** Where opencode runs (its project files): default the current directory. */
  projectDir: string;
  /** --router; default STALLGUARD_URL, plugin.router_url, serve's router.json, the default URL. */
  routerUrl?: string | null;
  /** --opencode; default `opencode` on PATH. */
  opencodeBin?: string | null;
  /** --upstream: send a models request to the upstream. */
  upstream?: boolean;
  /** --db, as serve takes it; default server.db. A postgres:// URL adds the PostgreSQL checks. */
  db?: string | null;
  fetchImpl?: typeof fetch;
}

function fileState(path: string): FileState {
  if (!existsSync(path)) return "missing";
  try {
    accessSync(path, constants.R_OK);
    readFileSync(path);
    return "readable";
  } catch {
    return "unreadable";
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? "").split(delimiter).filter(Boolean)) {
    const p = join(dir, name);
    try {
      accessSync(p, constants.X_OK);
      if (statSync(p).isFile()) return p;
    } catch {
      // not here
    }
  }
  return null;
}

function opencodeFact(o: GatherOptions): DoctorFacts["opencode"] {
  const path = o.opencodeBin || onPath("opencode", o.env);
  if (!path) return { path: null, version: null, error: null };
  const r = spawnSync(path, ["--version"], {
    encoding: "utf8",
    timeout: 20_000,
    env: o.env,
    cwd: o.projectDir,
  });
  const version = r.status === 0 ? (r.stdout ?? "").trim().split("\n").pop()?.trim() || null : null;
  const error = r.error
    ? r.error.message
    : r.status !== 0
      ? (r.stderr || `exit ${r.status}`).trim().slice(0, 200)
      : null;
  return { path, version, error };
}

function pluginFacts(o: GatherOptions): { dirs: string[]; copies: PluginCopy[] } {
  const roots: Array<[PluginCopy["scope"], string]> = [
    ["global", globalConfigDir(o.env)],
    ["project", join(o.projectDir, ".opencode")],
  ];
  const copies: PluginCopy[] = [];
  for (const [scope, root] of roots)
    for (const sub of ["plugins", "plugin"]) {
      const path = join(root, sub, "stallguard.js");
      if (!existsSync(path)) continue;
      let version: string | null = null;
      try {
        version = bundleVersion(readFileSync(path, "utf8"));
      } catch {
        version = null;
      }
      copies.push({ scope, path, version });
    }
  return { dirs: roots.map(([, r]) => join(r, "plugins")), copies };
}

function configFiles(o: GatherOptions): ConfigFileFact[] {
  const global = globalConfigDir(o.env);
  const candidates = [
    ...["config.json", "opencode.json", "opencode.jsonc"].map((f) => join(global, f)),
    ...(o.env.OPENCODE_CONFIG ? [o.env.OPENCODE_CONFIG] : []),
    ...["opencode.json", "opencode.jsonc"].map((f) => join(o.projectDir, f)),
    ...["opencode.json", "opencode.jsonc"].map((f) => join(o.projectDir, ".opencode", f)),
  ];
  return candidates
    .filter((p) => existsSync(p))
    .map((path) => {
      try {
        return { path, value: parseJsonc(readFileSync(path, "utf8")) };
      } catch (err) {
        return { path, error: (err as Error).message };
      }
    });
}

function secretFacts(o: GatherOptions): SecretFact[] {
  const paths = secretFilePaths(o.env);
  const list: Array<[string, string, string]> = [
    ["plugin.token", paths.plugin, o.config.plugin.token_env],
    ["admin.token", paths.admin, "STALLGUARD_ADMIN_TOKEN"],
    ["client.key", paths.client, "STALLGUARD_CLIENT_KEY"],
  ];
  return list.map(([file, path, env]) => {
    const state = fileState(path);
    return {
      file,
      path,
      env,
      envSet: Boolean(o.env[env]?.trim()),
      state,
      mode: state === "missing" ? null : statSync(path).mode & 0o777,
    };
  });
}

async function routerFact(url: string, fetchImpl: typeof fetch): Promise<DoctorFacts["router"]> {
  try {
    const res = await fetchImpl(`${url.replace(/\/+$/, "")}/health`, { signal: AbortSignal.timeout(3000) });
    const body = healthSchema.safeParse(await res.json());
    if (!body.success) return { ok: false, error: `GET /health answered ${res.status} in an unknown shape` };
    return { ok: true, health: body.data };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { ok: false, error: cause ?? (err as Error).message };
  }
}

/** The value of the gate provider's apiKey as opencode would send it, or why there is none. */
function keyValue(o: GatherOptions, apiKey: string | null, file: string): string | { why: string } {
  const form = keyForm(apiKey);
  if (form.kind === "missing") return { why: "no apiKey" };
  if (form.kind === "literal") return (apiKey ?? "").trim();
  if (form.kind === "env") return o.env[form.name]?.trim() || { why: `${form.name} is not set` };
  try {
    const path = resolveFileRef(form.path, file, o.env.HOME || homedir());
    return readFileSync(path, "utf8").trim() || { why: `${path} is empty` };
  } catch (err) {
    return { why: (err as NodeJS.ErrnoException).code ?? "unreadable" };
  }
}

/**
 * Asks the router whether the provider's key is one of the gate's client keys
 * (GET /gate). The key goes only where opencode sends it anyway: this
 * provider's baseURL is the router's /v1.
 */
async function keyFact(
  o: GatherOptions,
  routerUrl: string,
  files: ConfigFileFact[],
  fetchImpl: typeof fetch,
): Promise<KeyCheck | undefined> {
  const env = Object.fromEntries(referencesIn(files).env.map((n) => [n, o.env[n]]));
  const p = gateProvider(files, env, `${routerUrl.replace(/\/+$/, "")}/v1`);
  if (!p) return undefined;
  const key = keyValue(o, p.apiKey, p.file);
  if (typeof key !== "string") return { state: "unchecked", why: key.why };
  try {
    const res = await fetchImpl(`${routerUrl.replace(/\/+$/, "")}/gate`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(3000),
    });
    const body = (await res.json().catch(() => null)) as { client?: unknown } | null;
    if (res.ok && typeof body?.client === "string") return { state: "accepted", client: body.client };
    if (res.status === 401) return { state: "refused", status: 401 };
    return {
      state: "unchecked",
      why: `GET /gate answered ${res.status} (a router from before the key check)`,
    };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { state: "unchecked", why: `the router did not answer (${cause ?? (err as Error).message})` };
  }
}

async function upstreamFact(o: GatherOptions, fetchImpl: typeof fetch): Promise<DoctorFacts["upstream"]> {
  if (!o.upstream) return null;
  const url = o.config.server.upstream;
  if (!url) return { url: null, ok: false, detail: "not set" };
  const keyEnv = o.config.server.upstream_api_key_env;
  const key = keyEnv ? o.env[keyEnv]?.trim() : undefined;
  if (keyEnv && !key) return { url, ok: false, detail: `${keyEnv} (server.upstream_api_key_env) is not set` };
  try {
    const res = await fetchImpl(`${url.replace(/\/+$/, "")}/models`, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      signal: AbortSignal.timeout(10_000),
    });
    if (res.ok) return { url, ok: true, detail: `GET /models answered ${res.status}` };
    if (res.status === 401 || res.status === 403)
      return { url, ok: false, detail: `GET /models answered ${res.status}: the upstream refused the key` };
    return { url, ok: false, detail: `GET /models answered ${res.status}` };
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause?.code;
    return { url, ok: false, detail: `no answer: ${cause ?? (err as Error).message}` };
  }
}

async function desktopFact(o: GatherOptions): Promise<DoctorFacts["desktop"]> {
  const channels = o.config.notifications.channels.filter((c) => c.type === "desktop" && c.enabled);
  if (channels.length === 0) return { enabled: false, problems: [], channels: [] };
  const env = sessionBusEnv(o.env);
  const problems = await checkSessionBus(env);
  for (const c of channels) {
    const missing = c.type === "desktop" ? checkCommand(c.command, env) : null;
    if (missing) problems.push(missing);
  }
  return { enabled: true, problems, channels: channels.map((c) => c.name) };
}

function unitsFact(o: GatherOptions): DoctorFacts["units"] {
  const dir = userUnitDir(o.env);
  const installed = UNIT_FILES.filter((n) => existsSync(join(dir, n)));
  const missing = installed.length ? UNIT_FILES.filter((n) => !installed.includes(n)) : [];
  let active: Record<string, string> | null = null;
  const ask = installed.filter((n) => n !== "stallguard-watchdog.service");
  if (ask.length) {
    const r = spawnSync("systemctl", ["--user", "is-active", ...ask], {
      encoding: "utf8",
      timeout: 5000,
      env: o.env,
    });
    const lines = (r.stdout ?? "").trim().split("\n").filter(Boolean);
    if (!r.error && lines.length === ask.length)
      active = Object.fromEntries(ask.map((n, i) => [n, lines[i] as string]));
  }
  return { dir, installed: [...installed], missing: [...missing], active };
}

/** The config file a fix tells the user to edit: this install's config/config.local.yaml, by its full path. */
function localConfigPath(): string {
  const root = packageRoot(dirname(fileURLToPath(import.meta.url)));
  return root ? join(root, "config", "config.local.yaml") : "config/config.local.yaml";
}

/** The version the plugin should carry when the router cannot say (it is down, or runs from source). */
function packageVersion(): string {
  if (VERSION !== "dev") return VERSION;
  const root = packageRoot(dirname(fileURLToPath(import.meta.url)));
  try {
    return root
      ? (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version
      : "dev";
  } catch {
    return "dev";
  }
}

export async function gatherFacts(o: GatherOptions): Promise<DoctorFacts> {
  const fetchImpl = o.fetchImpl ?? fetch;
  const resolved = routerUrlFor(o.config, o.env, o.routerUrl);
  const routerUrl = resolved.url;
  const routerFrom = o.routerUrl
    ? "from --router"
    : describeUrlSource(resolved.source, routerLinkPath(o.env));
  const router = await routerFact(routerUrl, fetchImpl);
  const live = router.ok ? router.health : null;
  const files = configFiles(o);
  const refs = referencesIn(files);
  const home = o.env.HOME || homedir();
  const plugins = pluginFacts(o);
  const keyCheck = router.ok ? await keyFact(o, routerUrl, files, fetchImpl) : undefined;
  const db = o.db ?? o.config.server.db;
  const pgStore = db && isPgUrl(db) ? await gatherPgStore(db, o.env) : undefined;
  return {
    now: o.now,
    mode: (live?.mode as Mode | undefined) ?? o.config.progress.mode,
    routerUrl,
    routerFrom,
    localConfig: o.configPath ?? localConfigPath(),
    packageVersion: packageVersion(),
    ...(keyCheck ? { keyCheck } : {}),
    ...(pgStore ? { pgStore } : {}),
    expectedVersion: live && live.version !== "dev" ? live.version : packageVersion(),
    opencode: opencodeFact(o),
    pluginDirs: plugins.dirs,
    plugins: plugins.copies,
    opencodeConfig: {
      files,
      env: Object.fromEntries(refs.env.map((n) => [n, o.env[n]])),
      fileRefs: Object.fromEntries(
        refs.files.map(([file, ref]) => {
          const path = resolveFileRef(ref, file, home);
          return [path, fileState(path)];
        }),
      ),
      home,
    },
    router,
    secrets: secretFacts(o),
    upstream: await upstreamFact(o, fetchImpl),
    desktop: await desktopFact(o),
    units: unitsFact(o),
    watchdog: { enabled: o.config.watchdog.enabled, intervalMs: o.config.watchdog.interval },
  };
}
