// `--labels-from URL|FILE`: the admin's marks as labels. A URL is the router
// (its GET /api/labels, with the admin token from STALLGUARD_ADMIN_TOKEN or the
// admin.token file); a file is one exported from the admin page. Either way
// the document is the labels form --labels reads: a false alarm is "healthy",
// a confirmed loop "loop".
import { existsSync, readFileSync } from "node:fs";
import { secretFilePaths } from "../../io/secret-files.ts";
import { UsageError } from "./args.ts";
import { type LabelSet, parseLabelSet } from "./labels.ts";

/** GET /api/labels of the router at `url` (a base URL or the endpoint itself). */
export function labelsUrl(url: string): string {
  const u = new URL(url);
  if (!u.pathname.replace(/\/+$/, "").endsWith("/api/labels"))
    u.pathname = `${u.pathname.replace(/\/+$/, "")}/api/labels`;
  return u.toString();
}

/** The admin token: the environment first, then the admin.token file; null when neither has one. */
export function adminToken(env: NodeJS.ProcessEnv): string | null {
  const fromEnv = env.STALLGUARD_ADMIN_TOKEN?.trim();
  if (fromEnv) return fromEnv;
  const file = secretFilePaths(env).admin;
  try {
    return existsSync(file) ? readFileSync(file, "utf8").trim() || null : null;
  } catch {
    return null;
  }
}

export async function loadLabelsFrom(
  source: string,
  env: NodeJS.ProcessEnv,
  fetchImpl: typeof fetch = fetch,
): Promise<LabelSet> {
  if (!/^https?:\/\//i.test(source)) {
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(source, "utf8"));
    } catch (err) {
      throw new UsageError(`--labels-from: cannot read ${source}: ${(err as Error).message}`);
    }
    return parseLabelSet(source, doc);
  }
  const token = adminToken(env);
  if (!token)
    throw new UsageError(
      `--labels-from: the router's labels need the admin token: set STALLGUARD_ADMIN_TOKEN or create ${secretFilePaths(env).admin}`,
    );
  const url = labelsUrl(source);
  const get = () =>
    fetchImpl(url, {
      headers: { authorization: `Bearer ${token}`, accept: "application/json" },
      signal: AbortSignal.timeout(10_000),
    });
  let res: Response;
  try {
    // One retry for a GET whose pooled connection the router had just closed
    // (keep-alive expiry while a sweep held the event loop); a timeout is final.
    res = await get().catch((err: Error) => (err.name === "TimeoutError" ? Promise.reject(err) : get()));
  } catch (err) {
    throw new Error(`--labels-from: the router at ${source} did not answer: ${(err as Error).message}`);
  }
  if (res.status === 401) throw new Error(`--labels-from: the router at ${source} refused the admin token`);
  if (!res.ok) throw new Error(`--labels-from: GET ${url} answered ${res.status}`);
  return parseLabelSet(source, (await res.json()) as unknown);
}
