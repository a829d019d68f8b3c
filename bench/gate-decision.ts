// The gate's decision alone, in this process, on either engine: 10,000
// sessions answered from memory, then decide and record as a busy gate does
// (on SQLite with the batches written on the event loop, and by the writer
// thread as serve does).
//
//   npx tsx bench/gate-decision.ts [--engine sqlite|postgres]
//   (postgres: a throwaway server, test/helpers/postgres.ts)
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance as nodePerformance } from "node:perf_hooks";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { RequestRecord } from "../router-ext/gate/types.ts";
import { openPgStore } from "../router-ext/store/pg-store.ts";
import type { SqlStore } from "../router-ext/store/sql-store.ts";
import { openSqliteStore } from "../router-ext/store/sqlite-store.ts";
import { startPostgres } from "../test/helpers/postgres.ts";

/**
 * The decision alone, in this process: a store (a fresh SQLite file, or a
 * throwaway PostgreSQL) with
 * 10,000 sessions in 1,000 trees (100 of them stopped) answering from memory;
 * then decide and record as a busy gate does (50 sessions at work, a batch
 * written every 50 requests), the batch writes included.
 */
export async function decisionCost(store: SqlStore): Promise<string> {
  const who = (i: number) => ({
    sessionId: `ses_${i}`,
    agent: "build",
    parent: i % 10 === 0 ? null : `ses_${i - (i % 10)}`,
    pluginVersion: "0.1.0",
  });
  for (let i = 0; i < 10_000; i++) store.decide(who(i));
  await store.flush();
  for (let t = 0; t < 1000; t += 10)
    await store.setRefusal("tree", `ses_${t * 10}`, "stopped", "bench", 1, null);
  const n = 200_000;
  let refused = 0;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) if (store.peek(who((i * 7919) % 10_000)).refused) refused++;
  const peekUs = ((performance.now() - t0) * 1000) / n;
  const m = 20_000;
  const t1 = performance.now();
  const elu = nodePerformance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  for (let i = 0; i < m; i++) {
    const id = who(5000 + (i % 50));
    store.recordRequest(benchRecord(id.sessionId, store.decide(id).refused, i));
    if (i % 50 === 49) await store.flush();
  }
  await store.flush();
  const busyUs = ((performance.now() - t1) * 1000) / m;
  // The event loop's busy time (ELU active) is what a request waits behind; the
  // process's CPU adds the writer thread's, where it has one.
  const loopUs = (nodePerformance.eventLoopUtilization(elu).active * 1000) / m;
  const used = process.cpuUsage(cpu);
  const cpuUs = (used.user + used.system) / m;
  return (
    `decision from memory ${peekUs.toFixed(2)} us (10,000 sessions, ${refused} of ${n} refused); ` +
    `decide + record + its share of the batch write ${busyUs.toFixed(1)} us (50 sessions at work): ` +
    `${loopUs.toFixed(1)} us of it on the event loop, ${cpuUs.toFixed(1)} us of CPU in all threads`
  );
}

function benchRecord(sessionId: string, refused: boolean, i: number): RequestRecord {
  return {
    session_id: sessionId,
    root_id: null,
    agent: "build",
    parent: null,
    model: "bench",
    status: refused ? 403 : 200,
    prompt_tokens: 1000,
    completion_tokens: 8,
    cached_tokens: null,
    cost_usd: 0.003,
    context_tokens: 1000,
    started_at: 1_800_000_000_000 + i,
    duration_ms: 1,
    refused,
    plugin_version: "0.1.0",
    client: "bench",
    error: null,
    response_bytes: 500,
  };
}

/** The decision cost on a fresh SQLite file (bench/gate-latency.ts prints it too). */
export async function decisionOnSqlite(writerThread = false): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "sg-bench-decide-"));
  const store = await openSqliteStore(join(dir, "d.db"), { writerThread });
  try {
    return await decisionCost(store);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The decision cost on a throwaway PostgreSQL. */
export async function decisionOnPostgres(): Promise<string> {
  const server = await startPostgres();
  try {
    const url = await server.createDatabase("decide");
    const store = await openPgStore(url, { STALLGUARD_PG_PASSWORD: server.password }, { log: () => {} });
    try {
      return await decisionCost(store);
    } finally {
      await store.close();
    }
  } finally {
    await server.stop();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values } = parseArgs({ options: { engine: { type: "string", default: "sqlite" } } });
  const engine = values.engine === "postgres" ? "postgres" : "sqlite";
  if (engine === "postgres") console.log(`postgres: ${await decisionOnPostgres()}`);
  else {
    console.log(`sqlite, batches written on the event loop: ${await decisionOnSqlite(false)}`);
    console.log(`sqlite, batches written by the writer thread (serve): ${await decisionOnSqlite(true)}`);
  }
}
