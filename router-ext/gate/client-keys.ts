// Who may spend the model key: a request to /v1 presents one of the gate's
// client keys as its bearer token (opencode sends its provider's apiKey so).
// Every configured key is compared, in constant time, so neither the match
// nor its position leaks through timing. The upstream key is added only after.
import { bearerToken, safeEqual } from "../server/security.ts";
import { errorBody } from "./answers.ts";

/** A named client key; the name is recorded with every request it makes. */
export interface ClientKey {
  name: string;
  key: string;
}

/** The key a request presents, or null when it presents none or an unknown one. */
export function clientKeyOf(
  authorization: string | null | undefined,
  keys: readonly ClientKey[],
): ClientKey | null {
  const token = bearerToken(authorization);
  if (token === null) return null;
  let found: ClientKey | null = null;
  for (const k of keys) if (safeEqual(token, k.key) && found === null) found = k;
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
