// Which headers cross the gate: hop-by-hop ones never do (RFC 9110 7.6.1),
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
const DROP_RESPONSE = new Set(["content-length", "content-encoding"]);

/** Splits a Connection header into the extra header names it marks hop-by-hop. */
function connectionTokens(headers: Headers): Set<string> {
  const v = headers.get("connection");
  return new Set(
    (v ?? "")
      .split(",")
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

/** The headers that cross: not hop-by-hop, not named by Connection, not in `drop`. */
function crossing(
  incoming: Headers,
  drop: ReadonlySet<string>,
  add: (out: Headers, n: string, v: string) => void,
) {
  const listed = connectionTokens(incoming);
  const out = new Headers();
  incoming.forEach((value, name) => {
    const n = name.toLowerCase();
    if (!HOP_BY_HOP.has(n) && !drop.has(n) && !listed.has(n)) add(out, n, value);
  });
  return out;
}

export function forwardRequestHeaders(incoming: Headers, apiKey: string | null): Headers {
  const out = crossing(incoming, DROP_REQUEST, (o, n, v) => o.set(n, v));
  // Plain bytes from upstream: the usage scanner reads them and fetch would decode anyway.
  out.set("accept-encoding", "identity");
  if (apiKey) out.set("authorization", `Bearer ${apiKey}`);
  return out;
}

export function forwardResponseHeaders(incoming: Headers): Headers {
  // append, not set: a response may carry a header more than once (set-cookie).
  return crossing(incoming, DROP_RESPONSE, (o, n, v) => o.append(n, v));
}

export function upstreamUrl(upstream: string, rest: string, search: string): string {
  return `${upstream.replace(/\/+$/, "")}/${rest.replace(/^\/+/, "")}${search}`;
}
