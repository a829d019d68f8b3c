// One JSON POST for the HTTP channels. Errors carry the status or the socket
// error code, never the URL (it may be a secret read from the environment).
import { DeliveryError } from "./secret-env.ts";

export interface PostOptions {
  url: URL;
  body: unknown;
  headers?: Record<string, string>;
  signal: AbortSignal;
}

function causeCode(err: unknown): string | null {
  const cause = (err as { cause?: unknown }).cause;
  if (typeof cause === "object" && cause !== null) {
    const code = (cause as { code?: unknown }).code;
    if (typeof code === "string") return code;
  }
  return null;
}

/** POSTs JSON; resolves on a 2xx answer, rejects with a DeliveryError otherwise. */
export async function postJson(o: PostOptions): Promise<void> {
  let res: Response;
  try {
    res = await fetch(o.url, {
      method: "POST",
      headers: { "content-type": "application/json", ...o.headers },
      body: JSON.stringify(o.body),
      signal: o.signal,
      redirect: "error",
    });
  } catch (err) {
    if (o.signal.aborted) throw new DeliveryError("request aborted");
    const code = causeCode(err);
    throw new DeliveryError(code ? `request failed: ${code}` : "request failed");
  }
  try {
    await res.body?.cancel();
  } catch {
    // The status is all we need; a body that cannot be drained changes nothing.
  }
  if (!res.ok) throw new DeliveryError(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`);
}

/** The host of a URL, for display (no path, query or credentials). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "?";
  }
}
