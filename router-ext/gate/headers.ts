// Which headers cross the gate, on node's raw header lists ([name, value,
// name, value, ...] as received): hop-by-hop ones never do (RFC 9110 7.6.1),
// the upstream gets plain bytes and the configured key.

// Headers that belong to one hop and must not be forwarded (RFC 9110 7.6.1).
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "trailers",
  "transfer-encoding",
  "upgrade",
]);
// Recomputed or owned by this hop. The client's Authorization is its client key
// for this gate: it never goes up (the upstream key replaces it). The plugin's
// report headers (its process id and local router URL) are for this gate only.
const DROP_REQUEST = new Set([
  "host",
  "content-length",
  "accept-encoding",
  "expect",
  "authorization",
  "cookie",
  "x-stallguard-instance",
  "x-stallguard-report-to",
  "x-stallguard-report-state",
]);
const NONE: ReadonlySet<string> = new Set<string>();
const LENGTH = new Set(["content-length"]);

/**
 * The headers that cross, in one pass: not hop-by-hop, not in `drop`, and
 * (rare, so filtered only when present) not named by a Connection header.
 */
function crossing(raw: readonly string[], drop: ReadonlySet<string>): string[] {
  const out: string[] = [];
  let listed: Set<string> | null = null;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const n = (raw[i] as string).toLowerCase();
    const v = raw[i + 1] as string;
    if (n === "connection") listed = connectionTokens(v, listed);
    if (!HOP_BY_HOP.has(n) && !drop.has(n)) out.push(n, v);
  }
  if (listed === null || listed.size === 0) return out;
  const kept: string[] = [];
  for (let i = 0; i + 1 < out.length; i += 2)
    if (!listed.has(out[i] as string)) kept.push(out[i] as string, out[i + 1] as string);
  return kept;
}

/** Adds the header names a Connection header value marks hop-by-hop. */
function connectionTokens(value: string, into: Set<string> | null): Set<string> | null {
  // The usual values (every keep-alive answer carries one) name no header.
  if (/^\s*(keep-alive|close)\s*$/i.test(value)) return into;
  const listed = into ?? new Set<string>();
  for (const t of value.split(",")) {
    const name = t.trim().toLowerCase();
    if (name && name !== "keep-alive" && name !== "close") listed.add(name);
  }
  return listed;
}

/** The request's headers for the upstream, with its own key and, for a whole body, its length. */
export function forwardRequestHeaders(
  raw: readonly string[],
  apiKey: string | null,
  contentLength: number | null,
): string[] {
  const out = crossing(raw, DROP_REQUEST);
  // Plain bytes from upstream: the usage scanner reads them as they pass.
  out.push("accept-encoding", "identity");
  if (apiKey) out.push("authorization", `Bearer ${apiKey}`);
  if (contentLength !== null) out.push("content-length", String(contentLength));
  return out;
}

/**
 * The upstream's response headers for the client; `keepLength` when the body
 * passes byte for byte (a set-cookie sent twice stays twice).
 */
export function forwardResponseHeaders(raw: readonly string[], keepLength: boolean): string[] {
  return crossing(raw, keepLength ? NONE : LENGTH);
}

/** One header of a node request as a string (repeats joined), null when absent. */
export function headerOf(headers: NodeJS.Dict<string | string[]>, name: string): string | null {
  const v = headers[name];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(", ") : v;
}

/** One header of a raw list (name case ignored; repeats joined), null when absent. */
export function rawHeader(raw: readonly string[], name: string): string | null {
  let value: string | null = null;
  for (let i = 0; i + 1 < raw.length; i += 2)
    if ((raw[i] as string).toLowerCase() === name)
      value = value === null ? (raw[i + 1] as string) : `${value}, ${raw[i + 1]}`;
  return value;
}
