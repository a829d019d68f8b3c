// Where /v1 is served: a node:http listener in front of the hono app, so a
// model request goes straight to the gate's proxy and every other path to
// the app (its browser guard, tokens and routes).
import { createServer, type IncomingMessage, type RequestListener, type ServerResponse } from "node:http";
import type { NodeHandler } from "./proxy.ts";

/** /v1, /v1/... and /v1?...: the model endpoint. */
export function isGatePath(url: string | undefined): boolean {
  if (!url?.startsWith("/v1")) return false;
  const next = url.charCodeAt(3);
  return Number.isNaN(next) || next === 0x2f || next === 0x3f; // end, "/" or "?"
}

/** A listener that sends /v1 to `gate()` (looked up per request) and the rest to `app`. */
export function gateFirst(gate: () => NodeHandler, app: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (isGatePath(req.url)) gate()(req, res);
    else app(req, res);
  };
}

/** createServer for @hono/node-server's serve(): the same server, with the gate in front. */
export function gateFirstServer(gate: () => NodeHandler): typeof createServer {
  return ((options: object, app: RequestListener) =>
    createServer(options, gateFirst(gate, app))) as typeof createServer;
}
