// The gate's read-only questions on hono: GET /gate (whose client key is
// this bearer token?) and GET /gate/:session (is this session refused?), for
// doctor and for a router that prefers to ask. Neither learns nor records
// anything (an <img> pointing here must not create a session row); the proxy
// on /v1/* is gate/proxy.ts.
import { Hono } from "hono";
import { idSchema } from "../../shared/index.ts";
import { errorBody, json } from "./answers.ts";
import { type ClientKey, clientKeyOf, unauthorizedBody } from "./client-keys.ts";
import type { GateMetrics } from "./metrics.ts";
import type { GateStore } from "./types.ts";

export interface GateRoutesOptions {
  store: GateStore;
  clientKeys: readonly ClientKey[];
  /** What the 401 tells the user to set. */
  clientKeyHint?: string;
  metrics?: GateMetrics;
}

export function gateRoutes(opts: GateRoutesOptions): Hono {
  const app = new Hono();
  // Doctor checks opencode.json's apiKey with it. Reads and writes nothing else.
  app.get("/gate", (c) => {
    const authorization = c.req.header("authorization");
    const client = clientKeyOf(authorization, opts.clientKeys);
    if (client !== null) return c.json({ client: client.name });
    opts.metrics?.unauthorized();
    const hint = opts.clientKeyHint ?? "a key from server.client_keys";
    return json(401, unauthorizedBody(authorization !== undefined, hint));
  });
  app.get("/gate/:session", (c) => {
    const parsed = idSchema.safeParse(c.req.param("session"));
    if (!parsed.success) {
      return c.json(
        errorBody(
          "session id must be 1-200 of A-Z a-z 0-9 _ . : - (opencode's id charset)",
          "invalid_request_error",
          "bad_id",
        ),
        400,
      );
    }
    const d = opts.store.peek({ sessionId: parsed.data, agent: null, parent: null, pluginVersion: null });
    return c.json({
      session_id: parsed.data,
      refused: d.refused,
      scope: d.refused ? d.scope : null,
      reason: d.refused ? d.reason : null,
      root_id: d.rootId,
    });
  });
  return app;
}
