// The load balancer the replica suite puts in front of two serve processes
// (test/helpers/haproxy.ts), checked on two plain HTTP servers: requests go
// round robin, and a server whose /health fails is taken out within a second.
import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Haproxy, haproxyBin, haproxyTitle, startHaproxy } from "../helpers/haproxy.ts";

function backend(name: string, healthy: { ok: boolean }): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.url === "/health") res.writeHead(healthy.ok ? 200 : 503).end();
    else res.writeHead(200, { "content-type": "text/plain" }).end(name);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const a = server.address();
      resolve({ server, port: typeof a === "object" && a ? a.port : 0 });
    }),
  );
}

describe.skipIf(!haproxyBin)(haproxyTitle("HAProxy harness: round robin with a health check"), () => {
  const bHealth = { ok: true };
  let lb: Haproxy;
  const servers: Server[] = [];

  beforeAll(async () => {
    const a = await backend("a", { ok: true });
    const b = await backend("b", bHealth);
    servers.push(a.server, b.server);
    lb = await startHaproxy([
      { name: "a", port: a.port },
      { name: "b", port: b.port },
    ]);
  });
  afterAll(async () => {
    await lb?.stop();
    for (const s of servers) s.close();
  });

  const names = async (n: number) => {
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(await (await fetch(`${lb.url}/x`)).text());
    return out;
  };

  it("sends requests to both servers in turn, and none to one whose health check fails", async () => {
    await new Promise((r) => setTimeout(r, 500)); // the first health checks
    expect(new Set(await names(6))).toEqual(new Set(["a", "b"]));
    bHealth.ok = false;
    await new Promise((r) => setTimeout(r, 1500)); // three failed checks 300 ms apart
    expect(await names(6)).toEqual(["a", "a", "a", "a", "a", "a"]);
  });
});
