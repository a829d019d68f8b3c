// The one bearer check of the server's routes: the admin API, POST /progress
// and the per-session series of /metrics. Not hono's bearerAuth, which answers
// a malformed header 400 with a WWW-Authenticate challenge and accepts its own
// token alphabet; here every missing or wrong token is a 401 whose JSON error
// names the credential to send, compared by isToken (security.ts: sha256
// digests through timingSafeEqual, so neither content nor length leaks).
import type { MiddlewareHandler } from "hono";
import { isToken } from "./security.ts";

/** c.var.tokenOk: whether the request carried the token (false only when `optional` let it in without one). */
export type TokenVariables = { tokenOk: boolean };

export interface RequireTokenOptions {
  token: string;
  /** The 401 answer's error text. */
  error: string;
  /** A request without an Authorization header passes too (tokenOk false); a wrong token is still 401. */
  optional?: boolean;
}

/**
 * @example
 * app.use("/api/*", requireToken({ token: adminToken, error: "admin token required" }));
 */
export function requireToken(opts: RequireTokenOptions): MiddlewareHandler<{ Variables: TokenVariables }> {
  return async function requireToken(c, next) {
    const header = c.req.header("authorization");
    const ok = isToken(header, opts.token);
    if (!ok && !(opts.optional === true && header === undefined)) return c.json({ error: opts.error }, 401);
    c.set("tokenOk", ok);
    await next();
  };
}
