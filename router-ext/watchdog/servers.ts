// Finding opencode: the servers recorded in rc-servers.json (written by a
// session-registry plugin), the ones named in config, and --server flags.
// The registry file's layout is not pinned anywhere, so it is read leniently:
// any `serverUrl` / `server_url` / `url` string in the top-level object, an
// array of entries, or the values of a map. A missing or malformed file is an
// empty list, never an error.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { opencodeDataDir } from "../opencode-db/path.ts";

/** `$XDG_DATA_HOME/opencode/rc-servers.json`, defaulting to `~/.local/share`. */
export function rcServersPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(opencodeDataDir(env), "rc-servers.json");
}

/** An http(s) URL without credentials, query or trailing slash; null when it is not one. */
export function normalizeServerUrl(raw: unknown): string | null {
  if (typeof raw !== "string" || raw.length === 0 || raw.length > 2048) return null;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return null;
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") return null;
  if (u.username || u.password) return null;
  const path = u.pathname.replace(/\/+$/, "");
  return `${u.protocol}//${u.host}${path}`;
}

const URL_KEYS = ["serverUrl", "server_url", "serverURL", "url"] as const;

function urlsOf(entry: unknown): string[] {
  if (typeof entry === "string") return [entry];
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return [];
  const rec = entry as Record<string, unknown>;
  for (const k of URL_KEYS) if (typeof rec[k] === "string") return [rec[k] as string];
  return [];
}

/** Server URLs from the registry file's parsed JSON (any of the tolerated layouts). */
export function serversFromRegistry(json: unknown): string[] {
  const found: string[] = [];
  const visit = (list: unknown[]) => {
    for (const e of list.slice(0, 1000)) found.push(...urlsOf(e));
  };
  if (Array.isArray(json)) visit(json);
  else if (json !== null && typeof json === "object") {
    const rec = json as Record<string, unknown>;
    found.push(...urlsOf(rec));
    if (Array.isArray(rec.servers)) visit(rec.servers);
    else if (rec.servers && typeof rec.servers === "object") visit(Object.values(rec.servers));
    else if (found.length === 0) visit(Object.values(rec));
  }
  return found.map(normalizeServerUrl).filter((u): u is string => u !== null);
}

/** Reads the registry file; missing, unreadable or malformed -> []. */
export function readRcServers(path: string, log?: (line: string) => void): string[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  if (text.length > 1_000_000) {
    log?.(`watchdog: ${path} is too large, ignored`);
    return [];
  }
  try {
    return serversFromRegistry(JSON.parse(text));
  } catch {
    log?.(`watchdog: ${path} is not valid JSON, ignored`);
    return [];
  }
}

/** Registry, config and flag URLs, normalized and deduplicated in that order. */
export function collectServers(sources: {
  registry: readonly string[];
  config: readonly string[];
  flags: readonly string[];
}): string[] {
  const out = new Set<string>();
  for (const raw of [...sources.registry, ...sources.config, ...sources.flags]) {
    const u = normalizeServerUrl(raw);
    if (u) out.add(u);
  }
  return [...out];
}

/**
 * The credential rule: OPENCODE_SERVER_PASSWORD goes only to servers the
 * operator named where secrets live, the registry file opencode writes, the
 * config files and --server flags. A URL only the admin page's watchdog.servers
 * knob names (a browser session can set it) is probed without credentials.
 */
export function authFor(
  auth: string | null,
  operator: { registry: readonly string[]; configFiles: readonly string[]; flags: readonly string[] },
): (url: string) => string | null {
  const trusted = new Set(
    collectServers({ registry: operator.registry, config: operator.configFiles, flags: operator.flags }),
  );
  return (url) => (auth !== null && trusted.has(url) ? auth : null);
}

/** Basic auth for servers started with OPENCODE_SERVER_PASSWORD, as opencode's own clients send it. */
export function opencodeAuthHeader(env: NodeJS.ProcessEnv): string | null {
  const pass = env.OPENCODE_SERVER_PASSWORD;
  if (!pass) return null;
  const user = env.OPENCODE_SERVER_USERNAME || "opencode";
  return `Basic ${Buffer.from(`${user}:${pass}`).toString("base64")}`;
}

/** True when anything HTTP answers at the server's health route within the timeout. */
export async function probeServer(
  url: string,
  opts: { timeoutMs: number; fetchImpl: typeof fetch; auth: string | null },
): Promise<boolean> {
  try {
    const res = await opts.fetchImpl(`${url}/global/health`, {
      signal: AbortSignal.timeout(opts.timeoutMs),
      headers: opts.auth ? { authorization: opts.auth } : {},
    });
    await res.body?.cancel().catch(() => undefined);
    return true;
  } catch {
    return false;
  }
}
