// Retention on a busy router: one prune of N gate requests older than the
// retention (the store's real SQLite file, serve's own store with its writer
// thread), while a 1 ms timer on the serving thread measures how late its
// event loop runs: the longest gap is how long a /v1 request that came in
// during the prune waited. The floor: one bare DELETE of the same rows on a
// copy of the file (the least the deletion costs, in one go). --kept sets the
// newer requests that stay (the gate reads its facts from them after a prune).
//
//   npx tsx bench/retention-prune.ts [--requests 20000,100000] [--kept 10000] [--rounds 3]
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import Database from "better-sqlite3";
import { served } from "../router-ext/breaker/testing.ts";
import { openSqliteStore } from "../router-ext/store/sqlite-store.ts";
import { fmt, type LoopDelay, loopDelay, medianOf, printTable, timeMs } from "./core-stats.ts";

const { values } = parseArgs({
  options: {
    requests: { type: "string", default: "20000,100000" },
    kept: { type: "string", default: "10000" },
    rounds: { type: "string", default: "3" },
  },
});
const sizes = String(values.requests).split(",").map(Number);
const rounds = Number(values.rounds);
const kept = Number(values.kept);
const DAY = 86_400_000;
const T0 = 1_800_000_000_000;
const RETENTION = 7 * DAY;

/** A store file with `n` requests from 8 days ago (to prune) and `kept` from the last day. */
async function fill(path: string, n: number): Promise<void> {
  const store = await openSqliteStore(path);
  for (let i = 0; i < n + kept; i++) {
    const old = i < n;
    const at = old ? T0 - 8 * DAY + i : T0 - DAY + i;
    store.recordRequest(served("a/m", `ses_${i % 500}_${i % 4}`, at, `ses_${i % 500}_0`));
  }
  await store.flush();
  await store.close();
}

const rows: string[][] = [];
for (const n of sizes) {
  const dir = mkdtempSync(join(tmpdir(), "sg-bench-prune-"));
  try {
    const seed = join(dir, "seed.db");
    await fill(seed, n);
    const prune: LoopDelay[] = [];
    const bare: number[] = [];
    for (let r = 0; r < rounds; r++) {
      const copy = join(dir, `bare${r}.db`);
      copyFileSync(seed, copy);
      const db = new Database(copy);
      bare.push(timeMs(() => db.prepare("DELETE FROM requests WHERE started_at < ?").run(T0 - RETENTION)));
      db.close();
      const path = join(dir, `s${r}.db`);
      copyFileSync(seed, path);
      const store = await openSqliteStore(path, { writerThread: true });
      let pruned = 0;
      prune.push(await loopDelay(async () => (pruned = (await store.prune(T0, RETENTION)).requests)));
      if (pruned !== n) throw new Error(`pruned ${pruned} of ${n}`);
      await store.close();
    }
    const m = (f: "ms" | "max" | "p99") => medianOf(prune.map((x) => x[f]));
    rows.push(
      [n.toLocaleString("en-US"), "floor: one bare DELETE of the rows", fmt(medianOf(bare)), "", ""],
      [
        n.toLocaleString("en-US"),
        "store.prune (what retention runs)",
        fmt(m("ms")),
        fmt(m("max")),
        fmt(m("p99")),
      ],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
printTable(["requests pruned", "step", "median ms", "event loop max delay ms", "p99 delay ms"], rows);
console.log(
  `\n${kept.toLocaleString("en-US")} newer requests kept; medians of ${rounds} rounds, node ${process.version}`,
);
