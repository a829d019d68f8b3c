// Requests refused before any credential or body was accepted (no or a wrong
// token, a foreign Origin or Host, a non-JSON body). Counted in memory only:
// a refused request must not be able to write to the database.
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
