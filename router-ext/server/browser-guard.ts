// What a web page could send is refused before any route runs: a Host that is
// neither a loopback name, an IP literal nor the configured host (DNS
// rebinding: the page's own name resolving to 127.0.0.1), and on a request
// that spends, writes or stops, a foreign Origin or a body that is not JSON (a
// no-preflight text/plain POST). Pure checks first, then the middleware.

import { isIP } from "node:net";
import type { MiddlewareHandler } from "hono";

/** The host name of a Host header (port and IPv6 brackets removed), lowercased; null when malformed. */
export function hostName(header: string | null | undefined): string | null {
  if (!header) return null;
  const h = header.trim().toLowerCase();
  if (h.startsWith("[")) {
    const end = h.indexOf("]");
    return end > 1 ? h.slice(1, end) : null;
  }
  const name = h.replace(/:\d{1,5}$/, "");
  return /^[a-z0-9.-]{1,253}$/.test(name) ? name : null;
}

/**
 * A Host a rebinding page cannot produce: an IP literal (rebinding needs a
 * name the attacker controls), localhost (and *.localhost, which resolvers
 * keep on loopback) or the host the server was configured to listen on.
 */
export function hostAllowed(header: string | null | undefined, configuredHost: string): boolean {
  const name = hostName(header);
  if (name === null) return false;
  if (isIP(name) !== 0) return true;
  if (name === "localhost" || name.endsWith(".localhost")) return true;
  return name === configuredHost.trim().toLowerCase();
}

/** No Origin (not a browser, or a same-origin GET), or one naming this very server. */
export function originAllowed(
  origin: string | null | undefined,
  hostHeader: string | null | undefined,
): boolean {
  if (origin === null || origin === undefined) return true;
  try {
    const u = new URL(origin);
    return (
      (u.protocol === "http:" || u.protocol === "https:") &&
      u.host === (hostHeader ?? "").trim().toLowerCase()
    );
  } catch {
    return false; // "null" (a sandboxed frame, a data: page) and anything unparsable
  }
}

/** application/json or a +json type, with any parameters. */
export function isJsonType(contentType: string | null | undefined): boolean {
  const t = (contentType ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  return t === "application/json" || /^application\/[a-z0-9.+-]+\+json$/.test(t);
}

const WRITES = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export type Refusal = { status: 403 | 415 | 421; error: string; reason: "host" | "origin" | "content_type" };

/** The pure decision for one request: null lets it through. */
export function browserRefusal(
  req: {
    method: string;
    host: string | null;
    origin: string | null;
    fetchSite: string | null;
    contentType: string | null;
    hasBody: boolean;
  },
  configuredHost: string,
): Refusal | null {
  if (!hostAllowed(req.host, configuredHost))
    return {
      status: 421,
      error: "Host not allowed: use 127.0.0.1, localhost or server.host",
      reason: "host",
    };
  if (!WRITES.has(req.method)) return null;
  if (!originAllowed(req.origin, req.host) || req.fetchSite === "cross-site")
    return { status: 403, error: "cross-origin request refused", reason: "origin" };
  if (req.hasBody && !isJsonType(req.contentType))
    return { status: 415, error: "content-type must be application/json", reason: "content_type" };
  return null;
}

/**
 * The middleware: every route, before credentials are looked at. `onRefuse`
 * counts the refusal in memory (a refused request writes nothing).
 */
export function browserGuard(
  configuredHost: () => string,
  onRefuse: (reason: Refusal["reason"]) => void = () => {},
): MiddlewareHandler {
  return async (c, next) => {
    const h = c.req.raw.headers;
    const length = h.get("content-length");
    const refusal = browserRefusal(
      {
        method: c.req.method,
        // Over HTTP the URL's host is the Host header; in-process requests (app.request) have only the URL.
        host: h.get("host") ?? new URL(c.req.url).host,
        origin: h.get("origin"),
        fetchSite: h.get("sec-fetch-site"),
        contentType: h.get("content-type"),
        hasBody: (length !== null && length.trim() !== "0") || h.has("transfer-encoding"),
      },
      configuredHost(),
    );
    if (refusal) {
      onRefuse(refusal.reason);
      return c.json({ error: refusal.error }, refusal.status);
    }
    await next();
  };
}

/**
 * A route that reads only JSON (POST /progress): any other content type is
 * 415 even without a body, checked after the route's credential.
 */
export function requireJson(): MiddlewareHandler {
  return async function requireJson(c, next) {
    if (!/^application\/json\b/i.test(c.req.header("content-type") ?? ""))
      return c.json({ error: "content-type must be application/json" }, 415);
    await next();
  };
}
