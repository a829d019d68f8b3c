// GET /gate/:session: whether a session is refused, for a router that
// prefers to ask. Read only (an <img> pointing here must not create a
// session row); the proxy on /v1/* is gate/proxy.ts.
import { Hono } from "hono";
import { idSchema } from "../../shared/wire.ts";
import { errorBody } from "./answers.ts";
import type { GateStore } from "./store.ts";

export function gateRoutes(opts: { store: GateStore }): Hono {
  const app = new Hono();
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
