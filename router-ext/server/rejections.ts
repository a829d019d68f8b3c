// Requests refused before any credential or body was accepted (no or a wrong
// token, a foreign Origin or Host, a non-JSON body). Counted in memory only:
// a refused request must not be able to write to the database.
import type { MiddlewareHandler } from "hono";
import { metricLines } from "../prom-text.ts";

export class Rejections {
  private readonly counts = new Map<string, number>();

  add(path: "progress" | "api" | "gate" | "any", reason: string): void {
    const key = `${path}\u0000${reason}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  render(): string[] {
    return metricLines(
      "stallguard_refused_requests_total",
      "counter",
      "Requests refused for their credential, Origin, Host or content type.",
      [...this.counts].sort().map(([key, n]) => {
        const [path = "", reason = ""] = key.split("\u0000");
        return [{ path, reason }, n];
      }),
    );
  }
}

const pathOf = (p: string) => (p === "/progress" ? "progress" : p.startsWith("/api/") ? "api" : "any");

/**
 * Counts every refused answer of the app after its route ran: 401, 403, 415
 * and 421 anywhere, and on POST /progress a bad (400) or oversized (413) body.
 *
 * @example app.use("*", countRefusals(rejections));
 */
export function countRefusals(rejections: Rejections): MiddlewareHandler {
  return async function countRefusals(c, next) {
    await next();
    const s = c.res.status;
    if ([401, 403, 415, 421].includes(s) || (c.req.path === "/progress" && (s === 400 || s === 413)))
      rejections.add(pathOf(c.req.path), String(s));
  };
}
