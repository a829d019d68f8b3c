// What the gate costs: the same streaming chat workload against a local
// upstream directly and through the gate, in one run, with autocannon.
// Prints req/s and p50/p99 latency for both, the added latency and the
// throughput ratio; medians over RUNS alternating runs per target.
//
//   npx tsx bench/gate-latency.ts [--duration 3] [--connections 10] [--runs 3]
//
// Two workloads: "client asks for usage" (what opencode sends: pure
// pass-through plus the usage scan) and "gate injects usage" (the gate adds
// stream_options.include_usage and strips the usage-only chunk).
import { createServer } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { createGateMetrics } from "../router-ext/gate/index.ts";
import type { GateStore } from "../router-ext/gate/store.ts";
import { serveGate } from "../router-ext/gate/testing.ts";

interface AcResult {
  requests: { average: number };
  latency: { p50: number; p99: number; average: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
type Autocannon = (opts: {
  url: string;
  method: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
  body: string;
}) => Promise<AcResult>;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "3" },
    connections: { type: "string", default: "10" },
    runs: { type: "string", default: "3" },
  },
});
const DURATION = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const RUNS = Number(values.runs);

// A streaming upstream: 8 content chunks, a finish chunk, the usage chunk when asked, [DONE].
function chunk(obj: unknown): string {
  return `data: ${JSON.stringify(obj)}\n\n`;
}
const upstream = createServer((req, res) => {
  const parts: Buffer[] = [];
  req.on("data", (c: Buffer) => parts.push(c));
  req.on("end", () => {
    let includeUsage = false;
    try {
      includeUsage = JSON.parse(Buffer.concat(parts).toString("utf8")).stream_options?.include_usage === true;
    } catch {
      // not JSON: no usage
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    const base = { id: "chatcmpl-bench", object: "chat.completion.chunk", created: 0, model: "bench" };
    for (let i = 0; i < 8; i++) {
      res.write(
        chunk({ ...base, choices: [{ index: 0, delta: { content: `token ${i} ` }, finish_reason: null }] }),
      );
    }
    res.write(chunk({ ...base, choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
    if (includeUsage) {
      res.write(
        chunk({
          ...base,
          choices: [],
          usage: { prompt_tokens: 1000, completion_tokens: 8, total_tokens: 1008 },
        }),
      );
    }
    res.end("data: [DONE]\n\n");
  });
});
await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;

// A store that allows everything and drops records (the SQLite one is measured elsewhere).
let recorded = 0;
const store: GateStore = {
  decide: (id) => ({ refused: false, scope: null, reason: null, rootId: id.sessionId }),
  peek: (id) => ({ refused: false, scope: null, reason: null, rootId: id.sessionId }),
  recordRequest: () => {
    recorded++;
  },
};
const metrics = createGateMetrics();
const gate = await serveGate({
  upstream: upstreamUrl,
  apiKey: null,
  prices: { bench: { prompt: 3, completion: 15 } },
  refusal: { status: 429, retry_after_s: null },
  maxBodyBytes: 50 * 1024 * 1024,
  timeoutMs: 60_000,
  store,
  metrics,
  clientKeys: [{ name: "bench", key: "bench-client-key" }],
});

/** " (xN)" when the direct figure is above autocannon's 1 ms resolution, else nothing. */
const times = (gate: number, direct: number) => (direct > 0 ? ` (x${(gate / direct).toFixed(2)})` : "");
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};

interface Figures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function run(url: string, body: string): Promise<Figures> {
  const r = await autocannon({
    url: `${url}/chat/completions`,
    method: "POST",
    connections: CONNECTIONS,
    duration: DURATION,
    headers: {
      "content-type": "application/json",
      "x-session-id": "ses_bench",
      authorization: "Bearer bench-client-key",
    },
    body,
  });
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts + r.non2xx,
  };
}

async function compare(label: string, body: string) {
  const direct: Figures[] = [];
  const viaGate: Figures[] = [];
  for (let i = 0; i < RUNS; i++) {
    // Alternate so drifting machine load hits both sides alike.
    direct.push(await run(upstreamUrl, body));
    viaGate.push(await run(`${gate.url}/v1`, body));
  }
  const m = (xs: Figures[]) => ({
    rps: median(xs.map((x) => x.rps)),
    p50: median(xs.map((x) => x.p50)),
    p99: median(xs.map((x) => x.p99)),
    errors: xs.reduce((a, x) => a + x.errors, 0),
  });
  const d = m(direct);
  const g = m(viaGate);
  console.log(`\n${label} (${CONNECTIONS} connections, ${DURATION} s x ${RUNS} runs each, medians)`);
  console.log(`  direct : ${d.rps.toFixed(0)} req/s  p50 ${d.p50} ms  p99 ${d.p99} ms  errors ${d.errors}`);
  console.log(`  gate   : ${g.rps.toFixed(0)} req/s  p50 ${g.p50} ms  p99 ${g.p99} ms  errors ${g.errors}`);
  console.log(
    `  added  : p50 +${(g.p50 - d.p50).toFixed(2)} ms${times(g.p50, d.p50)}  ` +
      `p99 +${(g.p99 - d.p99).toFixed(2)} ms${times(g.p99, d.p99)}  throughput ratio ${(g.rps / d.rps).toFixed(2)}`,
  );
  return { label, direct: d, gate: g };
}

try {
  const messages = [{ role: "user", content: "bench" }];
  await compare(
    "client asks for usage (opencode's shape: pass-through + usage scan)",
    JSON.stringify({ model: "bench", stream: true, stream_options: { include_usage: true }, messages }),
  );
  await compare(
    "gate injects usage (line-framed, usage-only chunk stripped)",
    JSON.stringify({ model: "bench", stream: true, messages }),
  );
  const overhead =
    /stallguard_gate_overhead_seconds_sum (\S+)\nstallguard_gate_overhead_seconds_count (\S+)/.exec(
      metrics.render(),
    );
  if (overhead) {
    const mean = (Number(overhead[1]) / Number(overhead[2])) * 1000;
    console.log(
      `\ngate overhead histogram: ${overhead[2]} requests, mean ${mean.toFixed(3)} ms before the response head`,
    );
  }
  console.log(`requests recorded by the gate: ${recorded}`);
} finally {
  await gate.close();
  await new Promise<void>((r) => upstream.close(() => r()));
}
