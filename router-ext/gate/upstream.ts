// The request to the upstream: node's http client on a keep-alive agent (one
// connection pool for every gate this process builds), the path under the
// upstream's base, and one timeout: the upstream socket's silence, which
// covers both the wait for the response head and a stream that stops
// halfway. No redirect is followed.
import { Agent, type ClientRequest, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

const AGENTS = {
  http: new Agent({ keepAlive: true, scheduling: "lifo" }),
  https: new HttpsAgent({ keepAlive: true, scheduling: "lifo" }),
};

export interface UpstreamTarget {
  https: boolean;
  hostname: string;
  port: string;
  /** The Host header it expects (node adds none to a raw header list). */
  host: string;
  /** The base path without its trailing slash ("/v1"). */
  prefix: string;
}

/** The upstream base URL (ending in /v1), parsed once per gate. */
export function upstreamTarget(base: string): UpstreamTarget {
  const u = new URL(base);
  return {
    https: u.protocol === "https:",
    hostname: u.hostname.replace(/^\[|\]$/g, ""),
    port: u.port,
    host: u.host,
    prefix: u.pathname.replace(/\/+$/, ""),
  };
}

/** `<upstream>/<rest><search>` for a client path under /v1. */
export function upstreamPath(target: UpstreamTarget, rest: string, search: string): string {
  return `${target.prefix}/${rest.replace(/^\/+/, "")}${search}`;
}

export interface UpstreamCall {
  req: ClientRequest;
  /** The response head, or the error that came first (refused, reset, timed out). */
  head: Promise<IncomingMessage>;
  /** Whether the silence timeout ended it. */
  timedOut(): boolean;
}

export function openUpstream(
  target: UpstreamTarget,
  o: { method: string; path: string; headers: string[]; timeoutMs: number },
): UpstreamCall {
  let timedOut = false;
  const send = target.https ? httpsRequest : httpRequest;
  o.headers.push("host", target.host);
  const req = send({
    hostname: target.hostname,
    port: target.port,
    method: o.method,
    path: o.path,
    headers: o.headers,
    agent: target.https ? AGENTS.https : AGENTS.http,
  });
  // Small writes (a streamed body's chunks) leave at once, never held for an ACK.
  req.setNoDelay(true);
  req.setTimeout(o.timeoutMs, () => {
    timedOut = true;
    req.destroy(Object.assign(new Error("upstream silent"), { code: "ETIMEDOUT" }));
  });
  const head = new Promise<IncomingMessage>((resolve, reject) => {
    req.once("response", resolve);
    req.once("error", reject);
  });
  // A late error (after the head) is the relay's to report; this one must not go unhandled.
  head.catch(() => {});
  req.on("error", () => {});
  return { req, head, timedOut: () => timedOut };
}
