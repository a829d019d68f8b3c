// What the gate costs, against its floor: in one run, alternating, the same
// chat workload sent straight to a trivial local upstream ("direct"), through
// a bare node:http proxy (keep-alive agent, bodies piped: the floor of our
// runtime) and through the gate of a real `stallguard serve` (SQLite file,
// client key, every check and record) from the bundle `npm start` runs (built
// first). Each is its own process.
//
//   npx tsx bench/gate-latency.ts [--duration 2] [--runs 3] [--connections 1,10,50] [--body-kb 4]
//     [--workloads JSON,streaming] [--cpu-prof DIR] [--undici]
//
// --undici adds a fourth target: the bare proxy with undici on its upstream
// side, as the gate's (bench/bare-proxy-undici.ts), what the gate's choice of
// upstream client is measured by; the ratios stay to the node:http bare proxy.
// --cpu-prof writes the CPU profiles (node --cpu-prof) of the serve child and
// the bare proxy into DIR when they stop.
//
// Per workload (JSON, streaming) and connection count: req/s, mean latency
// (connections / throughput: exact for a closed loop), p50 and p99 from each
// response's own time (autocannon's histogram keeps whole milliseconds), the
// CPU time the target's process spent per request, the throughput ratio to
// the bare proxy and the mean added over direct; medians over the runs. Then
// the streaming time to first byte, from sequential requests, per target.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { decisionOnSqlite } from "./gate-decision.ts";
import { startServe } from "./serve-child.ts";

interface AcResult {
  requests: { average: number; total: number };
  errors: number;
  timeouts: number;
  non2xx: number;
}
/** A run: a promise of its result that also emits each response and its time (ms, from hrtime). */
type AcRun = Promise<AcResult> & {
  on(event: "response", f: (client: unknown, status: number, bytes: number, ms: number) => void): void;
};
type Autocannon = (opts: {
  url: string;
  method: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
  body: string;
}) => AcRun;
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "2" },
    runs: { type: "string", default: "3" },
    connections: { type: "string", default: "1,10,50" },
    "body-kb": { type: "string", default: "4" },
    "ttfb-requests": { type: "string", default: "600" },
    workloads: { type: "string", default: "JSON,streaming" },
    "cpu-prof": { type: "string" },
    undici: { type: "boolean", default: false },
  },
});
const DURATION = Number(values.duration);
const RUNS = Number(values.runs);
const CONNECTIONS = String(values.connections).split(",").map(Number);
const BODY_KB = Number(values["body-kb"]);
const TTFB_REQUESTS = Number(values["ttfb-requests"]);
const KEY = "bench-client-key-0123456789";
const HERE = fileURLToPath(new URL(".", import.meta.url));

/** Starts one of the bench's helper processes; resolves with its port. */
async function child(
  script: string,
  args: string[] = [],
  nodeArgs: string[] = [],
): Promise<{ proc: ChildProcess; port: number }> {
  const proc = spawn(process.execPath, [...nodeArgs, "--import", "tsx", join(HERE, script), ...args], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    proc.stdout?.on("data", (b: Buffer) => {
      out += b.toString();
      const m = /listening (\d+)/.exec(out);
      if (m?.[1]) resolve(Number(m[1]));
    });
    proc.once("exit", (code) => reject(new Error(`${script} exited (${code}): ${out}`)));
  });
  return { proc, port };
}

// An opencode-shaped request: a system prompt, a user turn, an assistant turn and a tool result.
const filler = "You are a coding agent. Read the task, plan, edit files and run the tests. ".repeat(
  Math.max(1, Math.round((BODY_KB * 1024) / 80)),
);
const messages = [
  { role: "system", content: filler },
  { role: "user", content: "Fix the failing test in src/parse.ts" },
  { role: "assistant", content: "Reading the file first." },
  { role: "user", content: "tool result: 120 lines" },
];
const ALL_WORKLOADS = [
  { name: "JSON", body: JSON.stringify({ model: "bench", messages }) },
  {
    name: "streaming",
    body: JSON.stringify({ model: "bench", stream: true, stream_options: { include_usage: true }, messages }),
  },
];
const WORKLOADS = ALL_WORKLOADS.filter((w) => String(values.workloads).split(",").includes(w.name));
const HEADERS = {
  "content-type": "application/json",
  authorization: `Bearer ${KEY}`,
  "x-session-id": "ses_bench",
  "x-router-agent": "build",
  "x-stallguard-plugin": "0.1.0",
};

interface Figures {
  rps: number;
  /** CPU time of the target's own process (the upstream for direct) per request, microseconds. */
  cpu: number;
  mean: number;
  p50: number;
  p99: number;
  errors: number;
}

/** User + system CPU seconds of a process so far (Linux /proc; NaN elsewhere). */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return Number.NaN;
  }
}

async function load(t: Target, connections: number, body: string, duration = DURATION): Promise<Figures> {
  const cpu0 = cpuSeconds(t.pid);
  const run = autocannon({
    url: `${t.url}/chat/completions`,
    method: "POST",
    connections,
    duration,
    headers: HEADERS,
    body,
  });
  // Each response's own time: autocannon's histogram keeps whole milliseconds only.
  const times: number[] = [];
  run.on("response", (_client, _status, _bytes, ms) => {
    times.push(ms);
  });
  const r = await run;
  times.sort((a, b) => a - b);
  return {
    rps: r.requests.average,
    cpu: ((cpuSeconds(t.pid) - cpu0) * 1e6) / r.requests.total,
    mean: (connections * 1000) / r.requests.average,
    p50: quantile(times, 0.5),
    p99: quantile(times, 0.99),
    errors: r.errors + r.timeouts + r.non2xx,
  };
}

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? Number.NaN;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? Number.NaN;
};
const medianFigures = (xs: Figures[]): Figures => ({
  rps: median(xs.map((x) => x.rps)),
  cpu: median(xs.map((x) => x.cpu)),
  mean: median(xs.map((x) => x.mean)),
  p50: median(xs.map((x) => x.p50)),
  p99: median(xs.map((x) => x.p99)),
  errors: xs.reduce((a, x) => a + x.errors, 0),
});

/** Milliseconds from sending a streaming request to its first body byte, one request at a time. */
function ttfb(url: string, agent: Agent, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(`${url}/chat/completions`, { method: "POST", agent, headers: HEADERS }, (res) => {
      let first = -1;
      res.on("data", () => {
        if (first < 0) first = performance.now() - t0;
      });
      res.on("end", () => resolve(first));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** Where a load goes, and the process that serves it (its CPU time is counted). */
type Target = { name: string; url: string; pid: number | undefined };
const add = <T>(into: Record<string, T[]>, key: string, value: T) => {
  into[key] = [...(into[key] ?? []), value];
};
const rotate = <T>(xs: T[], by: number) => xs.map((_, i) => xs[(i + by) % xs.length] as T);

async function throughput(targets: Target[]) {
  const out: Record<string, Record<string, Figures>> = {};
  for (const w of WORKLOADS) {
    for (const connections of CONNECTIONS) {
      const seen: Record<string, Figures[]> = {};
      for (let run = 0; run < RUNS; run++) {
        // Alternate the order so drifting machine load hits them all alike.
        for (const t of rotate(targets, run)) add(seen, t.name, await load(t, connections, w.body));
      }
      const m = Object.fromEntries(targets.map((t) => [t.name, medianFigures(seen[t.name] ?? [])]));
      out[`${w.name}@${connections}`] = m;
      const bare = m.bare as Figures;
      const direct = m.direct as Figures;
      console.log(`\n${w.name}, ${connections} connection(s), ${DURATION} s x ${RUNS} runs each (medians)`);
      for (const t of targets) {
        const f = m[t.name] as Figures;
        console.log(
          `  ${t.name.padEnd(6)} ${f.rps.toFixed(0).padStart(6)} req/s  mean ${f.mean.toFixed(3)} ms  ` +
            `p50 ${f.p50.toFixed(2)} ms  p99 ${f.p99.toFixed(2)} ms  errors ${f.errors}  cpu ${f.cpu.toFixed(0)} us/req  ` +
            `x${(f.rps / bare.rps).toFixed(2)} of bare  mean +${(f.mean - direct.mean).toFixed(3)} ms over direct`,
        );
      }
    }
  }
  return out;
}

async function firstBytes(targets: Target[]) {
  const body = ALL_WORKLOADS[1]?.body ?? "";
  const agents = new Map(targets.map((t) => [t.name, new Agent({ keepAlive: true, maxSockets: 1 })]));
  const seen: Record<string, number[]> = {};
  for (let round = 0; round < TTFB_REQUESTS / 50; round++)
    for (const t of rotate(targets, round))
      for (let i = 0; i < 50; i++) add(seen, t.name, await ttfb(t.url, agents.get(t.name) as Agent, body));
  for (const a of agents.values()) a.destroy();
  console.log(`\nstreaming time to first byte (${TTFB_REQUESTS} sequential requests each, alternating)`);
  const stats = (xs: number[]) => {
    const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
    const s = [...xs].sort((a, b) => a - b);
    return { mean, p50: median(xs), p99: s[Math.floor(s.length * 0.99)] ?? Number.NaN };
  };
  const out = Object.fromEntries(targets.map((t) => [t.name, stats(seen[t.name] ?? [])]));
  for (const t of targets) {
    const s = out[t.name] as { mean: number; p50: number; p99: number };
    console.log(
      `  ${t.name.padEnd(6)} mean ${s.mean.toFixed(3)} ms  p50 ${s.p50.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms`,
    );
  }
  return out;
}

async function gateOverhead(url: string): Promise<string> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = /^stallguard_gate_overhead_seconds_sum (\S+)$/m.exec(text)?.[1];
  const count = /^stallguard_gate_overhead_seconds_count (\S+)$/m.exec(text)?.[1];
  if (!sum || !count) return "not found on /metrics";
  return `${count} requests, mean ${((Number(sum) / Number(count)) * 1000).toFixed(3)} ms before the response head`;
}

// The bundle users run (dist/stallguard.mjs, which serve-child.ts prefers over the sources).
const built = spawnSync(process.execPath, [join(HERE, "..", "deploy", "build.mjs")], { stdio: "inherit" });
if (built.status !== 0) throw new Error("npm run build failed");
const dir = mkdtempSync(join(tmpdir(), "sg-bench-gate-"));
const procs: ChildProcess[] = [];
try {
  const up = await child("bench-upstream.ts");
  procs.push(up.proc);
  const upstreamUrl = `http://127.0.0.1:${up.port}/v1`;
  const profile = values["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${values["cpu-prof"]}`] : [];
  const bare = await child("bare-proxy.ts", [upstreamUrl], profile);
  procs.push(bare.proc);
  const serve = await startServe(dir, {
    args: ["--upstream", upstreamUrl],
    env: { STALLGUARD_CLIENT_KEY: KEY },
    nodeArgs: profile,
  });
  procs.push(serve.proc);
  const targets: Target[] = [
    { name: "direct", url: upstreamUrl, pid: up.proc.pid },
    { name: "bare", url: `http://127.0.0.1:${bare.port}/v1`, pid: bare.proc.pid },
    { name: "gate", url: `${serve.url}/v1`, pid: serve.proc.pid },
  ];
  if (values.undici) {
    const undici = await child("bare-proxy-undici.ts", [upstreamUrl]);
    procs.push(undici.proc);
    targets.push({ name: "undici", url: `http://127.0.0.1:${undici.port}/v1`, pid: undici.proc.pid });
  }
  console.log(
    `body ${ALL_WORKLOADS[0]?.body.length} bytes (JSON), upstream ${upstreamUrl}, gate ${serve.url} (real serve, SQLite)`,
  );
  // Warm-up: JIT, keep-alive sockets, the session's first learning.
  for (const t of targets) for (const w of WORKLOADS) await load(t, 10, w.body, 1);
  const figures = await throughput(targets);
  const first = await firstBytes(targets);
  console.log(`\ngate overhead histogram: ${await gateOverhead(serve.url)}`);
  console.log(
    `in-process, batches written by the writer thread as serve does: ${await decisionOnSqlite(true)}`,
  );

  const f = (k: string, t: string) => figures[k]?.[t] as Figures;
  console.log("\ntargets (issue 22):");
  for (const w of WORKLOADS) {
    const ratio = f(`${w.name}@10`, "gate")?.rps / f(`${w.name}@10`, "bare")?.rps;
    const added = f(`${w.name}@1`, "gate")?.mean - f(`${w.name}@1`, "direct")?.mean;
    const p99 = f(`${w.name}@10`, "gate")?.p99;
    console.log(
      `  ${w.name}: throughput at 10 connections x${ratio.toFixed(2)} of bare (>= 0.5), ` +
        `mean added at 1 connection ${added.toFixed(3)} ms (<= 0.3), p99 at 10 connections ${p99.toFixed(2)} ms ` +
        `(<= 3; bare ${f(`${w.name}@10`, "bare")?.p99.toFixed(2)} ms)`,
    );
  }
  const tt = (t: string) => (first[t] as { mean: number }).mean;
  console.log(`  streaming first byte: gate - bare ${(tt("gate") - tt("bare")).toFixed(3)} ms (<= 0.3)`);
} finally {
  for (const p of procs) {
    if (p.exitCode === null && p.signalCode === null) {
      const exited = new Promise((r) => p.once("exit", r));
      p.kill("SIGTERM");
      await exited;
    }
  }
  rmSync(dir, { recursive: true, force: true });
}
