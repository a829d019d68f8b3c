// POST /progress load test on loopback: `stallguard serve` as a child process
// on a fresh SQLite file, autocannon posting unique transitions (the plugin's
// real traffic: every body is a new verdict change, so every request writes).
// Bounded by request count; prints req/s and p50/p99 latency per run and the
// medians, and fails when any request errored or was not a 200.
//
//   node deploy/build.mjs && npx tsx bench/progress-throughput.ts [--runs 3] [--amount 20000] [--connections 10]
//     [--engine sqlite|postgres] [--replicas 1|2] [--sessions 500]   (postgres: a throwaway server; 2: behind HAProxy)
//   (uses dist/stallguard.mjs when present, else the TypeScript sources via tsx)
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchTarget } from "./bench-target.ts";

interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  duration: number;
}
interface AutocannonRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  setupRequest: (req: Record<string, unknown>) => Record<string, unknown>;
}
type Autocannon = (opts: {
  url: string;
  connections: number;
  amount: number;
  timeout: number;
  requests: AutocannonRequest[];
}) => Promise<AutocannonResult>;

const require = createRequire(import.meta.url);
const autocannon = require("autocannon") as Autocannon;

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "3" },
    amount: { type: "string", default: "20000" },
    connections: { type: "string", default: "10" },
    engine: { type: "string", default: "sqlite" },
    replicas: { type: "string", default: "1" },
    sessions: { type: "string", default: "500" },
  },
});
const engine = values.engine === "postgres" ? "postgres" : "sqlite";
const replicaCount = engine === "postgres" ? Math.max(1, Number(values.replicas)) : 1;
const runs = Math.max(1, Number(values.runs));
const amount = Math.max(100, Number(values.amount));
const connections = Math.max(1, Number(values.connections));
/** Distinct sessions the posts cycle through (the figure: 10,000). */
const sessions = Math.max(1, Number(values.sessions));

function body(n: number): string {
  const session = `ses_bench_${n % sessions}`;
  return JSON.stringify({
    type: "transition",
    id: `p:bench:${process.pid}:${n}`,
    source: "plugin",
    session_id: session,
    parent_id: n % 5 === 0 ? null : "ses_bench_root",
    root_id: "ses_bench_root",
    agent: "build",
    verdict: n % 2 === 0 ? "stalling" : "ok",
    previous: n % 2 === 0 ? "ok" : "stalling",
    reason: n % 2 === 0 ? "duplicates" : null,
    signals: {
      calls: 40,
      landed: 1,
      turns: 15,
      turns_since_landed: 6,
      calls_since_landed: 20,
      usd_since_landed: 0.12,
      usd_total: 0.5,
      dup_share: 0.45,
      ndup_share: 0.5,
      fail_streak: 0,
      context_tokens: 48_000,
      max_context_tokens: 50_000,
      novelty: 0.2,
      injected_since_landed: 0,
      flip_flops: 0,
      compactions: 0,
      read_only: false,
      last_landed_at: 1_700_000_000_000,
    },
    top_target: "read src/navbar.js",
    top_target_count: 7,
    report: "[stallguard] read src/navbar.js x7; 0 landed since the last change",
    at: 1_700_000_000_000 + n,
    plugin_version: "0.1.0",
  });
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

const dir = mkdtempSync(join(tmpdir(), "sg-bench-"));
const target = await benchTarget(dir, engine, replicaCount);
const url = target.url;
let failed = false;
const rows: AutocannonResult[] = [];
try {
  let n = 0;
  const requests: AutocannonRequest[] = [
    {
      method: "POST",
      path: "/progress",
      headers: { "content-type": "application/json", authorization: "Bearer bench-plugin" },
      setupRequest: (req) => ({ ...req, body: body(n++) }),
    },
  ];
  // Warm-up, not reported.
  await autocannon({
    url,
    connections,
    amount: 500,
    timeout: 10,
    requests,
  });
  for (let run = 1; run <= runs; run++) {
    const r = await autocannon({
      url,
      connections,
      amount,
      timeout: 10,
      requests,
    });
    rows.push(r);
    const bad = r.errors + r.timeouts + r.non2xx;
    if (bad > 0) failed = true;
    console.log(
      `run ${run}: ${r.requests.total} requests, ${r.requests.average.toFixed(0)} req/s, ` +
        `p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, errors ${r.errors}, non-2xx ${r.non2xx}, timeouts ${r.timeouts}`,
    );
  }
  console.log(
    `median over ${runs} runs (${amount} unique transitions each, ${sessions} sessions, ${connections} connections): ` +
      `${median(rows.map((r) => r.requests.average)).toFixed(0)} req/s, ` +
      `p50 ${median(rows.map((r) => r.latency.p50))} ms, p99 ${median(rows.map((r) => r.latency.p99))} ms`,
  );
} finally {
  await target.stop();
  rmSync(dir, { recursive: true, force: true });
}
if (failed) {
  console.error("FAIL: some requests errored or were not 200");
  process.exitCode = 1;
}
