// How an answer from POST /progress is read, the same for the plugin's
// reporter and the watchdog. The request itself is the shells'
// (io/progress-client.ts); what to do with each class is the caller's.

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

/** The router's /progress URL from its base URL. */
export function progressUrl(base: string): string {
  return `${base.replace(/\/+$/, "")}/progress`;
}
