// The admin page's reads on a busy router: how long each one holds the event
// loop every /v1 request is served on, with serve's store (its writer thread
// runs the reads) against the same file read on the main thread (as before).
// While an admin page is open it asks for the session list every 3 s and the
// client keys every 5 s. A 1 ms timer on the serving thread measures how
// late its event loop runs: the longest gap is what a /v1 request that came
// in during the read waited. The floor: the timer alone, idle.
//
//   npx tsx bench/admin-read-block.ts [--requests 200000] [--sessions 2000] [--rounds 5]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { served } from "../router-ext/breaker/testing.ts";
import { openSqliteStore, type SqliteStore } from "../router-ext/store/sqlite-store.ts";
import { fmt, type LoopDelay, loopDelay, medianOf, printTable } from "./core-stats.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "200000" },
    sessions: { type: "string", default: "2000" },
    rounds: { type: "string", default: "5" },
  },
});
const requests = Number(values.requests);
const sessions = Number(values.sessions);
const rounds = Number(values.rounds);
const DAY = 86_400_000;
const NOW = 1_800_000_000_000;
const CLIENTS = ["alice", "bob", "ci"];

/** A store file with `sessions` sessions (trees of 4) and `requests` requests spread over the last 7 days. */
async function fill(path: string): Promise<void> {
  const store = await openSqliteStore(path);
  for (let s = 0; s < sessions; s++) {
    const root = `ses_${s - (s % 4)}`;
    store.decide(
      { sessionId: `ses_${s}`, parent: s % 4 ? root : null, agent: "build", pluginVersion: null },
      NOW,
    );
  }
  for (let i = 0; i < requests; i++) {
    const s = i % sessions;
    const r = served(s % 2 ? "a/m" : "b/m", `ses_${s}`, NOW - 7 * DAY + Math.floor((i / requests) * 7 * DAY));
    store.recordRequest({
      ...r,
      root_id: `ses_${s - (s % 4)}`,
      cost_usd: 0.001,
      client: CLIENTS[s % 3] as string,
    });
    if (i % 20_000 === 19_999) await store.flush();
  }
  await store.close();
}

const READS: Record<string, (s: SqliteStore) => Promise<unknown>> = {
  "GET /api/sessions (the first 2,000)": (s) =>
    s.sessionPage({ now: NOW, liveWindowMs: 90_000, limit: 2000, offset: 0 }),
  "GET /api/clients (the retention, 7 days)": (s) => s.clientUsage(NOW - 7 * DAY),
  "GET /api/sessions/:id": (s) =>
    s.sessionDetail("ses_4", { now: NOW, liveWindowMs: 90_000, thresholds: {} }),
};

const dir = mkdtempSync(join(tmpdir(), "sg-bench-admin-"));
try {
  const path = join(dir, "store.db");
  await fill(path);
  const onThread = await openSqliteStore(path, { writerThread: true });
  const here = await openSqliteStore(path);
  const times: Record<string, LoopDelay[]> = {};
  const keep = (k: string, d: LoopDelay) => {
    times[k] = times[k] ?? [];
    times[k].push(d);
  };
  try {
    for (let r = 0; r < rounds; r++) {
      keep("idle", await loopDelay(() => new Promise((res) => setTimeout(res, 100))));
      for (const [name, read] of Object.entries(READS)) {
        // Alternating which goes first, so a warmer cache favours neither.
        const order = r % 2 ? [onThread, here] : [here, onThread];
        for (const s of order)
          keep(`${name}|${s === here ? "here" : "thread"}`, await loopDelay(() => read(s)));
      }
    }
  } finally {
    await onThread.close();
    await here.close();
  }
  const m = (k: string, f: (d: LoopDelay) => number) => medianOf((times[k] ?? []).map(f));
  const rows = [["idle (the floor: the timer alone)", "-", fmt(m("idle", (d) => d.max)), "-"]];
  for (const name of Object.keys(READS))
    for (const where of ["here", "thread"] as const) {
      const k = `${name}|${where}`;
      rows.push([
        `${name}, ${where === "here" ? "on the main thread (before)" : "on the writer thread (serve)"}`,
        fmt(m(k, (d) => d.ms)),
        fmt(m(k, (d) => d.max)),
        fmt(m(k, (d) => d.p99)),
      ]);
    }
  printTable(["read", "read ms", "event loop held, longest ms", "p99 gap ms"], rows);
  console.log(
    `\n${requests.toLocaleString("en-US")} requests of ${sessions.toLocaleString("en-US")} sessions in the store; medians of ${rounds} rounds, node ${process.version}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
