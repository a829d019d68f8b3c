// bench/bare-proxy.ts with undici on its upstream side: the same bare reverse
// proxy (nothing checked or recorded, node:http serving the client), the
// request body read whole and sent in one dispatch, the answer relayed chunk
// by chunk through undici's dispatch handler, as the gate's upstream.ts does.
// What the gate's choice of upstream client is measured by
// (bench/upstream-client.ts). Prints its port.
//
//   node --import tsx bench/bare-proxy-undici.ts http://127.0.0.1:PORT/v1
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent, type Dispatcher } from "undici";

const upstream = new URL(process.argv[2] ?? "");
const agent = new Agent({ pipelining: 1 });
const prefix = upstream.pathname.replace(/\/+$/, "");
const HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host"]);

const server = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (c: Buffer) => parts.push(c));
  req.on("end", () => {
    const headers: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2)
      if (!HOP.has((req.rawHeaders[i] as string).toLowerCase()))
        headers.push(req.rawHeaders[i] as string, req.rawHeaders[i + 1] as string);
    headers.push("host", upstream.host);
    const handler: Dispatcher.DispatchHandler = {
      onConnect() {},
      onHeaders(status, raw, resume) {
        const out: string[] = [];
        for (let i = 0; i < raw.length; i += 2) {
          const name = (raw[i] as Buffer).toString("latin1");
          if (!HOP.has(name.toLowerCase())) out.push(name, (raw[i + 1] as Buffer).toString("latin1"));
        }
        res.writeHead(status, out);
        res.on("drain", resume);
        return true;
      },
      onData: (chunk) => res.write(chunk),
      onComplete: () => res.end(),
      onError: () => {
        if (!res.headersSent) res.writeHead(502);
        res.end();
      },
    };
    agent.dispatch(
      {
        origin: upstream.origin,
        method: (req.method ?? "GET") as Dispatcher.HttpMethod,
        path: prefix + (req.url ?? "/").replace(/^\/v1/, ""),
        headers,
        body: parts.length === 1 ? parts[0] : Buffer.concat(parts),
      },
      handler,
    );
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
process.once("SIGTERM", () => process.exit(0));
