// Who may talk to the server: the bind-address rule and bearer tokens compared
// in constant time. (Loopback is no credential: every path needs its token.)
import { hash, timingSafeEqual } from "node:crypto";
import { isIP } from "node:net";

/** True for an address that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "");
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const v4 = h.startsWith("::ffff:") ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith("127.");
}

/**
 * The bind rule: loopback always; any other address only when both the admin
 * token and the plugins' shared token are set explicitly in the environment.
 */
export function checkBindHost(
  host: string,
  env: NodeJS.ProcessEnv,
): { ok: true } | { ok: false; message: string } {
  if (isLoopbackHost(host)) return { ok: true };
  const missing = ["STALLGUARD_ADMIN_TOKEN", "STALLGUARD_TOKEN"].filter((k) => !env[k]);
  if (missing.length === 0) return { ok: true };
  return {
    ok: false,
    message: `refusing to bind non-loopback address ${host}: set ${missing.join(" and ")} in the environment first`,
  };
}

/** The shortest token, and the fewest different characters in it, serve accepts beyond loopback. */
export const MIN_TOKEN_CHARS = 32;
export const MIN_TOKEN_DISTINCT = 10;

/**
 * Why a token is too weak to guard a server other machines can reach, or null:
 * fewer than 32 characters, or so few different ones (aaaa..., 1212...) that
 * its length says nothing. A generated token (43 base64url characters) passes.
 */
export function tokenWeakness(token: string): string | null {
  if (token.length < MIN_TOKEN_CHARS)
    return `is ${token.length} character(s); beyond loopback a token needs at least ${MIN_TOKEN_CHARS}`;
  const distinct = new Set(token).size;
  if (distinct < MIN_TOKEN_DISTINCT)
    return `has only ${distinct} different character(s); beyond loopback a token needs at least ${MIN_TOKEN_DISTINCT}`;
  return null;
}

/** The token of an `Authorization: Bearer <token>` header, or null. */
export function bearerToken(header: string | undefined | null): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? (m[1] ?? null) : null;
}

/** Whether an Authorization header carries `expected` as its bearer token (constant time). */
export function isToken(header: string | undefined | null, expected: string): boolean {
  const token = bearerToken(header);
  return token !== null && safeEqual(token, expected);
}

/**
 * A secret's sha256, what secrets are compared by. One-shot: a createHash()
 * object per request is a native object the garbage collector frees only in
 * its weak-handle pass, which lengthens every young-generation pause.
 */
export function secretDigest(secret: string): Buffer {
  return hash("sha256", secret, "buffer");
}

/** Compares two secrets in constant time (over their digests, so lengths do not leak either). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(secretDigest(a), secretDigest(b));
}
