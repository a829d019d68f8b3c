// A webhook receiver for tests: a real node:http server on a free loopback
// port that keeps every body (parsed as JSON, or the raw text when it is not)
// and answers 200, or what `status` says for a path.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";

export interface Hook<B = Record<string, unknown>> {
  /** The base URL plus /hook. */
  url: string;
  /** The base URL (no path), for channels that post to their own paths. */
  base: string;
  bodies: B[];
  close(): Promise<void>;
}

/** A request's body as text. */
export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

export async function startHook<B = Record<string, unknown>>(
  opts: { status?: (path: string) => number } = {},
): Promise<Hook<B>> {
  const bodies: B[] = [];
  const srv = createServer(async (req, res) => {
    const raw = await readBody(req);
    try {
      bodies.push(JSON.parse(raw) as B);
    } catch {
      bodies.push(raw as B);
    }
    res.writeHead(opts.status?.(req.url ?? "/") ?? 200, { "content-type": "application/json" }).end("{}");
  });
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${(srv.address() as AddressInfo).port}`;
  return {
    url: `${base}/hook`,
    base,
    bodies,
    close: () => new Promise<void>((r) => srv.close(() => r())),
  };
}

/** A config.local.yaml with the watchdog off and one json webhook channel to `url`, plus extra channel lines. */
export function webhookConfig(url: string, extra: string[] = []): string {
  return [
    "watchdog:",
    "  enabled: false",
    "notifications:",
    "  channels:",
    "    - name: hook",
    "      type: webhook",
    "      format: json",
    `      url: ${url}`,
    "      min_severity: warning",
    ...extra.map((l) => `      ${l}`),
    "",
  ].join("\n");
}
