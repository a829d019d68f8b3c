// Requests refused before any credential or body was accepted (no or a wrong
// token, a foreign Origin or Host, a non-JSON body). Counted in memory only:
// a refused request must not be able to write to the database.

export class Rejections {
  private readonly counts = new Map<string, number>();

  add(path: "progress" | "api" | "gate" | "any", reason: string): void {
    const key = `${path}\u0000${reason}`;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  render(): string[] {
    const lines = [
      "# HELP stallguard_refused_requests_total Requests refused for their credential, Origin, Host or content type.",
      "# TYPE stallguard_refused_requests_total counter",
    ];
    for (const [key, n] of [...this.counts].sort()) {
      const [path, reason] = key.split("\u0000");
      lines.push(`stallguard_refused_requests_total{path="${path}",reason="${reason}"} ${n}`);
    }
    return lines;
  }
}
