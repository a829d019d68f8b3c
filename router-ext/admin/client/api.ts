// The page's HTTP client: the admin token goes in the Authorization header on
// every call (never in a URL, never in a cookie), so a forged cross-site
// request carries no credential.

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: string[] = [],
  ) {
    super(message);
    this.name = "ApiError";
  }
}

export interface Api {
  /** GET a JSON body; a 404 resolves to null (an optional part such as the notifier is absent). */
  get(path: string, opts?: { optional?: boolean }): Promise<unknown>;
  send(method: "POST" | "PUT" | "PATCH" | "DELETE", path: string, body?: unknown): Promise<unknown>;
}

/** "path: message" lines from a 400 body's issues, whatever shape each issue has. */
export function issueLines(issues: unknown): string[] {
  if (!Array.isArray(issues)) return [];
  return issues.map((i) => {
    if (typeof i === "string") return i;
    if (typeof i === "object" && i !== null) {
      const o = i as Record<string, unknown>;
      const path = Array.isArray(o.path) ? o.path.join(".") : typeof o.path === "string" ? o.path : "";
      const msg = typeof o.message === "string" ? o.message : JSON.stringify(i);
      return path ? `${path}: ${msg}` : msg;
    }
    return String(i);
  });
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function errorFrom(status: number, body: unknown): ApiError {
  if (status === 401) return new ApiError(401, "401: admin token rejected");
  if (typeof body === "object" && body !== null) {
    const o = body as Record<string, unknown>;
    const issues = issueLines(o.issues);
    const head = typeof o.error === "string" ? o.error : `HTTP ${status}`;
    return new ApiError(status, issues.length ? `${head}: ${issues.join("; ")}` : head, issues);
  }
  return new ApiError(
    status,
    typeof body === "string" && body ? `HTTP ${status}: ${body}` : `HTTP ${status}`,
  );
}

export function createApi(token: string, fetchFn: typeof fetch = fetch.bind(globalThis)): Api {
  const headers = (json: boolean): Record<string, string> => ({
    authorization: `Bearer ${token}`,
    accept: "application/json",
    ...(json ? { "content-type": "application/json" } : {}),
  });
  const call = async (method: string, path: string, body?: unknown, optional = false) => {
    const res = await fetchFn(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? null : JSON.stringify(body),
      credentials: "omit",
      cache: "no-store",
      redirect: "error",
    });
    const parsed = await readBody(res);
    if (optional && (res.status === 404 || res.status === 501)) return null;
    if (!res.ok) throw errorFrom(res.status, parsed);
    return parsed;
  };
  return {
    get: (path, opts) => call("GET", path, undefined, opts?.optional === true),
    send: (method, path, body) => call(method, path, body),
  };
}
