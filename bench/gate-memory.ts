// The gate's memory under large request bodies: `stallguard serve` as a child
// process (real SQLite file), an upstream on loopback that reads and drops
// what it gets, and N concurrent bodies of SIZE bytes each through /v1 with
// the client key. The server's peak resident memory (VmHWM in
// /proc/<pid>/status) is read after the run; the ceiling is stated up front and
// the script fails above it. Each run is bounded (N requests, one each).
//
//   node deploy/build.mjs && npx tsx bench/gate-memory.ts [--bodies 20] [--mb 50] [--runs 3] [--ceiling-mb 200]
//   (uses dist/stallguard.mjs when present, else the TypeScript sources via tsx)
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startServe } from "./serve-child.ts";

const { values } = parseArgs({
  options: {
    bodies: { type: "string", default: "20" },
    mb: { type: "string", default: "50" },
    runs: { type: "string", default: "3" },
    "ceiling-mb": { type: "string", default: "200" },
  },
});
const BODIES = Math.max(1, Number(values.bodies));
const SIZE = Math.floor(Number(values.mb) * 1_000_000);
const RUNS = Math.max(1, Number(values.runs));
const CEILING = Number(values["ceiling-mb"]);
const KEY = "bench-client-key-0123456789";

/** Resident and peak resident memory of a process, in MB. */
function memory(pid: number): { rss: number; hwm: number } {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0);
  return { rss: kb("VmRSS") / 1024, hwm: kb("VmHWM") / 1024 };
}

// The upstream: counts and drops every byte, then answers a small completion.
let received = 0;
const upstream = createServer((req, res) => {
  req.on("data", (c: Buffer) => {
    received += c.length;
  });
  req.on("end", () => {
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ model: "bench", choices: [], usage: { prompt_tokens: 1, completion_tokens: 1 } }),
    );
  });
});
await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;

/** One POST of SIZE bytes, written in 64 KiB pieces as the socket drains (the bench holds no body). */
function post(url: string, size = SIZE): Promise<number> {
  const head = Buffer.from('{"model":"bench","messages":[{"role":"user","content":"');
  const tail = Buffer.from('"}],"stream":false}');
  const piece = Buffer.alloc(64 * 1024, "x");
  return new Promise((resolve, reject) => {
    const u = new URL(`${url}/v1/chat/completions`);
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: "POST",
        headers: {
          "content-type": "application/json",
          authorization: `Bearer ${KEY}`,
          "content-length": size,
        },
      },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
      },
    );
    req.on("error", reject);
    let left = size - head.length - tail.length;
    req.write(head);
    const pump = () => {
      while (left > 0) {
        const n = Math.min(left, piece.length);
        left -= n;
        if (!req.write(n === piece.length ? piece : piece.subarray(0, n))) {
          req.once("drain", pump);
          return;
        }
      }
      req.end(tail);
    };
    pump();
  });
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
const rows: Array<{ base: number; peak: number; seconds: number }> = [];
let failed = false;
for (let run = 1; run <= RUNS; run++) {
  const dir = mkdtempSync(join(tmpdir(), "sg-bench-mem-"));
  const { proc, url } = await startServe(dir, {
    args: ["--upstream", upstreamUrl],
    env: { STALLGUARD_CLIENT_KEY: KEY },
  });
  try {
    const pid = proc.pid as number;
    // One small request first: what the gate loads on first use (its HTTP client) is at rest, not buffering.
    await post(url, 1024);
    const base = memory(pid).rss;
    received = 0;
    const t0 = performance.now();
    const statuses = await Promise.all(Array.from({ length: BODIES }, () => post(url)));
    const seconds = (performance.now() - t0) / 1000;
    const peak = memory(pid).hwm;
    const bad = statuses.filter((s) => s !== 200).length;
    if (bad > 0 || received !== BODIES * SIZE) {
      failed = true;
      console.log(`run ${run}: ${bad} non-200 answers, upstream got ${received} of ${BODIES * SIZE} bytes`);
    }
    rows.push({ base, peak, seconds });
    console.log(
      `run ${run}: ${BODIES} x ${SIZE / 1e6} MB in ${seconds.toFixed(1)} s; server RSS ${base.toFixed(0)} MB at rest, peak ${peak.toFixed(0)} MB`,
    );
  } finally {
    proc.kill("SIGTERM");
    await new Promise((r) => proc.once("exit", r));
    rmSync(dir, { recursive: true, force: true });
  }
}
upstream.close();
const peak = median(rows.map((r) => r.peak));
console.log(
  `median: peak RSS ${peak.toFixed(0)} MB (at rest ${median(rows.map((r) => r.base)).toFixed(0)} MB), ` +
    `${median(rows.map((r) => r.seconds)).toFixed(1)} s for ${((BODIES * SIZE) / 1e9).toFixed(1)} GB; ceiling ${CEILING} MB`,
);
if (failed || Math.max(...rows.map((r) => r.peak)) > CEILING) {
  console.log("FAIL: a request failed or the peak went over the ceiling");
  process.exitCode = 1;
}
