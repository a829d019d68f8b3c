// Test support (not bundled): a real node:http /progress receiver on a free
// loopback port. Every body is kept raw (for the privacy checks) and
// validated with the wire schema; the receiver can answer, hang, refuse with
// a status, or go down and come back on the same port.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { type ProgressMessage, parseProgressBody } from "../shared/index.ts";
import { readBody } from "../test/helpers/hook.ts";

export type ReceiverMode = "ok" | "hang" | { status: number };

export interface ReceivedBody {
  raw: string;
  authorization: string | undefined;
  at: number;
}

export interface Receiver {
  url: string;
  port: number;
  bodies: ReceivedBody[];
  /** Every valid message, in arrival order. */
  messages: ProgressMessage[];
  /** Bodies that failed parseProgressBody, with the errors. */
  invalid: Array<{ raw: string; errors: string[] }>;
  setMode(mode: ReceiverMode): void;
  /** Stops listening (connections refused) until up(). */
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/**
 * token: the bearer token it wants. maxBytes: its body limit, said on GET /health
 * and enforced with a 413 naming it, as the router does.
 */
export async function startReceiver(opts: { token?: string; maxBytes?: number } = {}): Promise<Receiver> {
  const bodies: ReceivedBody[] = [];
  const messages: ProgressMessage[] = [];
  const invalid: Array<{ raw: string; errors: string[] }> = [];
  const sockets = new Set<Socket>();
  let mode: ReceiverMode = "ok";
  let port = 0;
  let server: Server | null = null;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === "GET" && req.url === "/health" && mode === "ok") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, max_progress_bytes: opts.maxBytes ?? 65_536 }));
      return;
    }
    const raw = await readBody(req);
    bodies.push({ raw, authorization: req.headers.authorization, at: Date.now() });
    if (mode === "hang") return; // never answer; down()/close() cut the socket
    if (typeof mode === "object") {
      res.writeHead(mode.status, { "content-type": "application/json" });
      res.end('{"error":"test"}');
      return;
    }
    if (req.method !== "POST" || req.url !== "/progress") {
      res.writeHead(404).end();
      return;
    }
    if (opts.token && req.headers.authorization !== `Bearer ${opts.token}`) {
      res.writeHead(401).end();
      return;
    }
    if (opts.maxBytes !== undefined && Buffer.byteLength(raw) > opts.maxBytes) {
      res.writeHead(413, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "too large", max_progress_bytes: opts.maxBytes }));
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      invalid.push({ raw, errors: ["not JSON"] });
      res.writeHead(400).end();
      return;
    }
    const r = parseProgressBody(body);
    if (!r.ok) {
      invalid.push({ raw, errors: r.errors });
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "invalid", issues: r.errors }));
      return;
    }
    messages.push(...r.value);
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ accepted: r.value.length, duplicates: 0 }));
  };

  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = createServer((req, res) => {
        handle(req, res).catch(() => {
          if (!res.headersSent) res.writeHead(500);
          res.end();
        });
      });
      s.on("connection", (c) => {
        sockets.add(c);
        c.on("close", () => sockets.delete(c));
      });
      s.once("error", reject);
      s.listen(port, "127.0.0.1", () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });

  const stop = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = null;
      for (const c of sockets) c.destroy();
      if (!s) return resolve();
      s.close(() => resolve());
    });

  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    bodies,
    messages,
    invalid,
    setMode: (m) => {
      mode = m;
    },
    down: stop,
    up: async () => {
      if (!server) await listen();
    },
    close: stop,
  };
}
