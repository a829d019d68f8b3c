// The one HTTP client for POST /progress, used by the plugin's reporter and
// the watchdog: one request, one timeout, one reading of the answer's status.
// What to do with each class (queue, drop, remember for the next tick) is the
// caller's.
import type { ProgressMessage } from "./wire.ts";

/**
 * How an answer is classed. sent: 2xx. retry: the router is down or busy (no
 * answer, 408, 425, 429, 5xx): the same body may succeed later. refused: the
 * router would not take it from us (401, 403, 404: a wrong token or URL).
 * rejected: the body itself is bad (400, 413 and any other 4xx).
 */
export type ProgressStatus = "sent" | "retry" | "refused" | "rejected";

export function classifyStatus(status: number): ProgressStatus {
  if (status >= 200 && status < 300) return "sent";
  if (status === 408 || status === 425 || status === 429 || status >= 500) return "retry";
  if (status === 401 || status === 403 || status === 404) return "refused";
  return "rejected";
}

export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface PostOptions {
  token: string | null;
  timeoutMs: number;
  fetch?: FetchLike;
}

export interface PostResult {
  status: ProgressStatus;
  /** The HTTP status; null when no answer came (refused connection, timeout). */
  http: number | null;
  /** The answer's body (a 2xx answer may carry directives and toasts); "" without one. */
  text: string;
  /** A short reason for logs: the network error or "HTTP 401". */
  detail: string;
}

/** The router's /progress URL from its base URL. */
export function progressUrl(base: string): string {
  return `${base.replace(/\/+$/, "")}/progress`;
}

/** POSTs one body (a message or a batch); never throws. */
export async function postProgress(
  baseUrl: string,
  body: ProgressMessage | ProgressMessage[],
  opts: PostOptions,
): Promise<PostResult> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const doFetch = opts.fetch ?? ((url: string, init: RequestInit) => fetch(url, init));
  let res: Response;
  try {
    res = await doFetch(progressUrl(baseUrl), {
      method: "POST",
      headers,
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
  } catch (err) {
    // Node's fetch says "fetch failed" with the reason in its cause (ECONNREFUSED);
    // Bun's (the plugin in opencode) puts it on the error itself (ConnectionRefused).
    const e = err as { code?: unknown; cause?: { code?: unknown }; message?: string };
    const code = typeof e?.cause?.code === "string" ? e.cause.code : e?.code;
    const detail = typeof code === "string" ? code : (e?.message ?? String(err));
    return { status: "retry", http: null, text: "", detail };
  }
  // Drained either way, so the connection is released.
  const text = await res.text().catch(() => "");
  return { status: classifyStatus(res.status), http: res.status, text, detail: `HTTP ${res.status}` };
}
