// Secrets come only from environment variables named in config. Errors name
// the variable, never its value.

export type Env = Readonly<Record<string, string | undefined>>;

export class DeliveryError extends Error {
  override name = "DeliveryError";
}

/** The value of a secret-bearing env var, or a DeliveryError naming the variable. */
export function secretFromEnv(env: Env, name: string): string {
  const value = env[name];
  if (value === undefined || value.trim() === "")
    throw new DeliveryError(`environment variable ${name} is not set`);
  return value.trim();
}

/** A URL read from an env var: must be http(s); the error does not echo the value. */
export function urlFromEnv(env: Env, name: string): URL {
  const raw = secretFromEnv(env, name);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new DeliveryError(`environment variable ${name} does not hold a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw new DeliveryError(`environment variable ${name} does not hold an http(s) URL`);
  return url;
}

/** "environment variable X is not set" for each named variable that is missing or empty. */
export function missingEnv(env: Env, names: Array<string | undefined>): string[] {
  return names
    .filter((n): n is string => n !== undefined)
    .filter((n) => (env[n] ?? "").trim() === "")
    .map((n) => `environment variable ${n} is not set`);
}
