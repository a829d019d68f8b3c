// The router link: what a plugin needs to find the router without any
// configuration, written by `serve` on every start into router.json next to
// plugin.token (0600, written whole under a fresh name and renamed over, so a
// reader never sees half of it): the URL a plugin reaches it on and where the
// plugin token is (the variable serve read it from, or the file). No secret
// is in it. The plugin, doctor and the watchdog read it (again before each
// use) and pick the router URL by one rule: STALLGUARD_URL, then
// plugin.router_url as configured, then this file, then the default. Like the
// token files (secret-files.ts), a symbolic link is never followed: read, it
// counts as no file; written, it is replaced, its target left alone.
import { randomBytes } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  fsyncSync,
  openSync,
  readSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import { z } from "zod";
import { privateDir, secretFilePaths } from "./secret-files.ts";

export const LINK_FILE = "router.json";
export const DEFAULT_ROUTER_URL = "http://127.0.0.1:4870";
const MAX_LINK_BYTES = 4096;

const httpUrl = z.url({ protocol: /^https?$/ }).max(300);

export const routerLinkSchema = z.strictObject({
  /** The router's base URL as a local plugin reaches it (a wildcard bind is written as loopback). */
  url: httpUrl,
  /** Where the plugin token is: the variable serve read it from, or the file. Never the value. */
  token: z.union([
    z.strictObject({ env: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/) }),
    z.strictObject({ file: z.string().min(1).max(4096) }),
  ]),
  version: z.string().max(64),
  pid: z.number().int().positive(),
  started_at: z.number().int().nonnegative(),
});
export type RouterLink = z.infer<typeof routerLinkSchema>;

/** $XDG_CONFIG_HOME/stallguard/router.json (beside plugin.token). */
export function routerLinkPath(env: NodeJS.ProcessEnv | Record<string, string | undefined>): string {
  return join(secretFilePaths(env).dir, LINK_FILE);
}

/** The URL a local client reaches a server bound to `host` on: a wildcard bind is reached on loopback. */
export function reachableUrl(host: string, port: number): string {
  const h = host === "0.0.0.0" || host === "" ? "127.0.0.1" : host === "::" ? "::1" : host;
  return `http://${h.includes(":") ? `[${h}]` : h}:${port}`;
}

/**
 * Writes the link file atomically (0600 in the 0700 folder): a new file under
 * a fresh name (never an existing file or a link), then renamed over the old
 * one. Throws with the path on failure.
 */
export function writeRouterLink(path: string, link: RouterLink): void {
  const dir = dirname(path);
  const tmp = join(dir, `.${basename(path)}.${process.pid}.${randomBytes(6).toString("hex")}`);
  try {
    privateDir(dir);
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const fd = openSync(tmp, flags, 0o600);
    try {
      writeSync(fd, `${JSON.stringify(link, null, 2)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, path);
  } catch (err) {
    try {
      rmSync(tmp, { force: true });
    } catch {
      // nothing was written there either
    }
    throw new Error(`cannot write ${path}: ${(err as Error).message}`);
  }
}

/**
 * The link file's content, or null when it is missing, a symbolic link, not a
 * regular file, too big or not valid. Never throws.
 */
export function readRouterLink(path: string): RouterLink | null {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > MAX_LINK_BYTES) return null;
    const buf = Buffer.alloc(MAX_LINK_BYTES + 1);
    const text = buf.subarray(0, readSync(fd, buf, 0, buf.length, 0)).toString("utf8");
    const parsed = routerLinkSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

export type RouterUrlSource = "env" | "config" | "link" | "default";

/** A base URL without trailing slashes, or null when it is not http(s). */
export function httpBase(text: string | null | undefined): string | null {
  if (!text) return null;
  return httpUrl.safeParse(text).success ? text.replace(/\/+$/, "") : null;
}

/**
 * The router URL by the one rule: STALLGUARD_URL (or --router), then
 * plugin.router_url as configured, then serve's link file, then the default.
 */
export function resolveRouterUrl(i: {
  envUrl?: string | null;
  configured?: string | null;
  link?: RouterLink | null;
}): { url: string; source: RouterUrlSource } {
  const env = httpBase(i.envUrl);
  if (env) return { url: env, source: "env" };
  const configured = httpBase(i.configured);
  if (configured) return { url: configured, source: "config" };
  const link = httpBase(i.link?.url);
  if (link) return { url: link, source: "link" };
  return { url: DEFAULT_ROUTER_URL, source: "default" };
}

/** Where a URL came from, for messages ("from router.json (written by stallguard serve)"). */
export function describeUrlSource(source: RouterUrlSource, linkPath: string): string {
  if (source === "env") return "from STALLGUARD_URL";
  if (source === "config") return "from plugin.router_url";
  if (source === "link") return `from ${linkPath} (written by stallguard serve)`;
  return `the default: no STALLGUARD_URL, no plugin.router_url, no ${linkPath}`;
}

/** The router URL a command on this machine uses: --router, then the rule above with this environment's link file. */
export function routerUrlFor(
  config: { plugin: { router_url: string | null } },
  env: NodeJS.ProcessEnv,
  flag?: string | null,
): { url: string; source: RouterUrlSource } {
  return resolveRouterUrl({
    envUrl: flag || env.STALLGUARD_URL,
    configured: config.plugin.router_url,
    link: readRouterLink(routerLinkPath(env)),
  });
}

/**
 * serve's part, on every start: writes router.json for the plugins on this
 * machine and says so (or why not: a read-only home under the systemd unit's
 * sandbox leaves plugins on STALLGUARD_URL or the default). Never throws.
 */
export function announceRouter(o: {
  env: NodeJS.ProcessEnv;
  host: string;
  port: number;
  tokenEnv: string;
  version: string;
  startedAt: number;
  log: (line: string) => void;
}): void {
  const path = routerLinkPath(o.env);
  const url = reachableUrl(o.host, o.port);
  // serve's own rule (resolveSecret): a variable set and not empty is the token; serve has refused an invalid one.
  const raw = o.env[o.tokenEnv];
  const fromEnv = raw !== undefined && raw !== "";
  const token = fromEnv ? { env: o.tokenEnv } : { file: secretFilePaths(o.env).plugin };
  try {
    writeRouterLink(path, { url, token, version: o.version, pid: process.pid, started_at: o.startedAt });
    const where = fromEnv ? `$${o.tokenEnv}` : token.file;
    o.log(`plugin link: ${path} says ${url}, token in ${where} (plugins without STALLGUARD_URL report here)`);
  } catch (err) {
    o.log(
      `plugin link: ${(err as Error).message}; plugins need STALLGUARD_URL=${url} unless it is the default`,
    );
  }
}
