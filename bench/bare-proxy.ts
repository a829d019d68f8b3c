// The floor for the gate's speed: a bare node:http reverse proxy, nothing
// checked or recorded, a keep-alive agent to the upstream and both bodies
// piped. Run as its own process, like `stallguard serve`. Prints its port.
//
//   node --import tsx bench/bare-proxy.ts http://127.0.0.1:PORT/v1
import { Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";

const upstream = new URL(process.argv[2] ?? "");
const agent = new Agent({ keepAlive: true, maxSockets: 256 });
const prefix = upstream.pathname.replace(/\/+$/, "");

const server = createServer((req, res) => {
  const headers = { ...req.headers, host: upstream.host };
  const up = request(
    {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: prefix + (req.url ?? "/").replace(/^\/v1/, ""),
      headers,
      agent,
    },
    (upRes) => {
      res.writeHead(upRes.statusCode ?? 502, upRes.headers);
      upRes.pipe(res);
    },
  );
  up.on("error", () => {
    if (!res.headersSent) res.writeHead(502);
    res.end();
  });
  req.pipe(up);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`listening ${(server.address() as AddressInfo).port}\n`);
});
// A clean exit on SIGTERM, so --cpu-prof can write its profile.
process.once("SIGTERM", () => process.exit(0));
