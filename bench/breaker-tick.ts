// The breaker's tick on a busy router: how long one evaluate() holds the
// event loop with N gate requests in its window (the store's real SQLite
// file), when too few trees stalled for any trip (the common case: the
// requests are not read) and when enough did (one row per model and tree,
// and the stalled sessions' requests, are read and weighed). The floor is a
// bare SELECT of the window's rows (what each tick read before). With enough
// stalls, also how long the evaluation holds the event loop with the reads on
// the main connection and on serve's writer thread (SqlStore.reads).
//
//   npx tsx bench/breaker-tick.ts [--requests 20000,100000] [--rounds 7]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { BreakerService } from "../router-ext/breaker/service.ts";
import { BreakerStore } from "../router-ext/breaker/store.ts";
import { served, stallTransition, storeTransition } from "../router-ext/breaker/testing.ts";
import { openSqliteStore } from "../router-ext/store/sqlite-store.ts";
import { configSchema } from "../shared/index.ts";
import { fmt, loopDelay, medianOf, printTable, timeMsAsync } from "./core-stats.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "20000,100000" },
    rounds: { type: "string", default: "7" },
  },
});
const sizes = String(values.requests).split(",").map(Number);
const rounds = Number(values.rounds);
const T0 = 1_800_000_000_000;
const MODELS = ["a/m", "b/m", "c/m"];

async function measure(n: number): Promise<string[][]> {
  const dir = mkdtempSync(join(tmpdir(), "sg-bench-breaker-"));
  const store = await openSqliteStore(join(dir, "s.db"), { writerThread: true });
  try {
    // n requests over the last 50 minutes: 500 trees of 4 sessions on three models.
    for (let i = 0; i < n; i++) {
      const tree = i % 500;
      const at = T0 + Math.floor((i / n) * 50 * 60_000);
      store.recordRequest(served(MODELS[tree % 3] as string, `ses_${tree}_${i % 4}`, at, `ses_${tree}_0`));
    }
    await store.flush();
    const now = T0 + 55 * 60_000;
    const cfg = configSchema.parse({}).breaker;
    const svc = new BreakerService({ store: new BreakerStore(store.sql), config: () => cfg, now: () => now });
    await svc.reload();
    const offMain = new BreakerStore(store.sql, undefined, store.reads);
    const svcThread = new BreakerService({ store: offMain, config: () => cfg, now: () => now });
    await svcThread.reload();
    const bare = store.sql;
    const floor = () =>
      bare.all("SELECT model, session_id, root_id, started_at FROM requests WHERE started_at >= ?", [
        now - cfg.window,
      ]);
    const times = {
      floor: [] as number[],
      quiet: [] as number[],
      stalled: [] as number[],
      heldHere: [] as number[],
      heldThread: [] as number[],
    };
    for (let r = 0; r < rounds; r++) {
      times.floor.push(await timeMsAsync(floor));
      times.quiet.push(await timeMsAsync(() => svc.evaluate(now)));
    }
    // Two stalled trees: still no trip possible. Then a third on a model whose
    // trees are a third of the traffic (no trip either: the rates are even).
    for (const t of [0, 1, 2])
      await storeTransition(store, stallTransition(`ses_${t * 3}_1`, now - 60_000 + t));
    for (let r = 0; r < rounds; r++) {
      times.stalled.push(await timeMsAsync(() => svc.evaluate(now)));
      times.heldHere.push((await loopDelay(() => svc.evaluate(now))).max);
      times.heldThread.push((await loopDelay(() => svcThread.evaluate(now))).max);
    }
    const f = medianOf(times.floor);
    const row = (name: string, t: number[]) => [
      `${n.toLocaleString("en-US")}`,
      name,
      fmt(medianOf(t)),
      fmt(medianOf(t) / f),
    ];
    return [
      row("floor: SELECT of the window's rows", times.floor),
      row("evaluate, fewer stalled trees than min_sessions", times.quiet),
      row("evaluate, 3 stalled trees (trees and stalled sessions read)", times.stalled),
      row("  its longest hold of the event loop, reads on the main connection", times.heldHere),
      row("  its longest hold of the event loop, reads on the writer thread (serve)", times.heldThread),
    ];
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: string[][] = [];
for (const n of sizes) rows.push(...(await measure(n)));
printTable(["requests in window", "step", "median ms", "x floor"], rows);
console.log(
  `\nmedian of ${rounds} evaluations each; each is the event loop held once per tick (10 s) on SQLite`,
);
