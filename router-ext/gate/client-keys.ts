// Who may spend the model key: a request to /v1 presents one of the gate's
// client keys as its bearer token (opencode sends its provider's apiKey so).
// Every configured key is compared, in constant time over sha256 digests,
// so neither the match nor its position (nor a length) leaks through timing.
// The keys' digests are computed once per key list, the presented token's
// once per request. The upstream key is added only after.
import { timingSafeEqual } from "node:crypto";
import { bearerToken, secretDigest as digest } from "../server/security.ts";
import { errorBody } from "./answers.ts";

/** A named client key; the name is recorded with every request it makes. */
export interface ClientKey {
  name: string;
  key: string;
}

const digests = new WeakMap<readonly ClientKey[], Buffer[]>();

/** The key a request presents, or null when it presents none or an unknown one. */
export function clientKeyOf(
  authorization: string | null | undefined,
  keys: readonly ClientKey[],
): ClientKey | null {
  const token = bearerToken(authorization);
  if (token === null) return null;
  let known = digests.get(keys);
  if (!known) {
    known = keys.map((k) => digest(k.key));
    digests.set(keys, known);
  }
  const presented = digest(token);
  let found: ClientKey | null = null;
  known.forEach((d, i) => {
    if (timingSafeEqual(presented, d) && found === null) found = keys[i] ?? null;
  });
  return found;
}

/**
 * The 401 answer, OpenAI-shaped so opencode shows its message: it names what
 * to set (`hint`: where the key lives and the opencode.json line that reads it).
 */
export function unauthorizedBody(presented: boolean, hint: string) {
  const what = presented ? "an unknown client key" : "no client key";
  return errorBody(
    `stallguard gate: 401, the request carried ${what}. Set the provider's "apiKey" in opencode.json to ${hint}`,
    "authentication_error",
    "invalid_api_key",
  );
}
