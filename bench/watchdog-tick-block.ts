// serve's in-process watchdog against the gate's event loop. One tick reads
// and judges a tree of N tool calls from opencode.db and posts its verdicts to
// a router on loopback: run on this thread (what serve did before) and on the
// watchdog's own thread (router-ext/watchdog/tick-thread.ts), alternating,
// while a 1 ms timer on this thread measures how late its event loop runs:
// the longest gap is how long a /v1 request that came in during the tick
// waited. The floor: the same timer over an idle spell as long as the tick.
//
//   npx tsx bench/watchdog-tick-block.ts [--calls 5000,20000] [--repeats 5]
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { runWatchdogTick, type WatchdogTickOptions } from "../router-ext/watchdog/tick.ts";
import { tickThread } from "../router-ext/watchdog/tick-thread.ts";
import { parseConfig } from "../shared/index.ts";
import { syntheticSession, writeOpencodeDb } from "./core-opencode-db.ts";
import { fmt, type LoopDelay, loopDelay, medianOf, printTable } from "./core-stats.ts";

const { values } = parseArgs({
  options: { calls: { type: "string", default: "5000,20000" }, repeats: { type: "string", default: "5" } },
});
const sizes = String(values.calls).split(",").map(Number);
const repeats = Number(values.repeats);

const parsed = parseConfig([{ source: "bench", value: { watchdog: { lookback: "1h", timeout: "10s" } } }]);
if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
const config = parsed.config;

const idle = (ms: number) => new Promise((r) => setTimeout(r, ms));

const router = createServer((req, res) => {
  req.resume();
  req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end('{"accepted":1}'));
});
await new Promise<void>((r) => router.listen(0, "127.0.0.1", r));
const routerUrl = `http://127.0.0.1:${(router.address() as AddressInfo).port}`;
const dir = mkdtempSync(join(tmpdir(), "stallguard-bench-wd-"));
// A thread waits KEEP_MS for the next tick: back to back, ticks reuse one (an
// interval under a minute); with keepMs 0 each tick starts its own (the
// default 5-minute interval).
const thread = tickThread((l) => console.error(l));
const fresh = tickThread((l) => console.error(l), undefined, 0);
const loads: number[] = [];
try {
  for (const calls of sizes) {
    const home = join(dir, `home${calls}`);
    mkdirSync(join(home, ".local", "share", "opencode"), { recursive: true });
    const doc = syntheticSession(1, calls, { steps: true });
    writeOpencodeDb(join(home, ".local", "share", "opencode", "opencode.db"), [doc]);
    const updated = (doc.info.time as { updated: number }).updated;
    let n = 0;
    // A fresh state each tick: every tick reads the tree whole, as the first tick after it changed does.
    const options = (): WatchdogTickOptions => ({
      config,
      routerUrl,
      token: "bench",
      statePath: join(home, `state${++n}`, "watchdog.json"),
      now: updated + 60_000,
      env: { HOME: home },
      log: () => undefined,
    });
    await thread.run(options()); // the kept thread starts and warms up
    await runWatchdogTick(options());
    const rows: Record<string, LoopDelay[]> = {
      here: [],
      thread: [],
      fresh: [],
      idle: [],
    };
    for (let r = 0; r < repeats; r++) {
      loads.push(loadavg()[0] as number);
      rows.here?.push(await loopDelay(() => runWatchdogTick(options())));
      const t = await loopDelay(() => thread.run(options()));
      rows.thread?.push(t);
      rows.idle?.push(await loopDelay(() => idle(t.ms)));
      rows.fresh?.push(await loopDelay(() => fresh.run(options())));
    }
    const m = (k: string, f: "ms" | "max" | "p99") => medianOf((rows[k] ?? []).map((x) => x[f]));
    console.log(`\none tree of ${fmt(calls, 0)} tool calls (opencode's step parts), ${repeats} rounds`);
    printTable(
      ["tick", "median tick ms", "event loop max delay ms", "p99 delay ms", "max x idle"],
      [
        ["on this thread (serve before)", "here"],
        ["on the watchdog's thread, kept (interval under a minute)", "thread"],
        ["on a thread started for it (the 5-minute default)", "fresh"],
        ["idle (the floor), as long as the thread's tick", "idle"],
      ].map(([label, k]) => [
        label as string,
        fmt(m(k as string, "ms"), 0),
        fmt(m(k as string, "max")),
        fmt(m(k as string, "p99")),
        fmt(m(k as string, "max") / m("idle", "max")),
      ]),
    );
  }
  console.log(
    `\nmedians, node ${process.version}, load average ${fmt(Math.min(...loads), 1)} to ${fmt(Math.max(...loads), 1)}`,
  );
} finally {
  await thread.close();
  await fresh.close();
  router.close();
  rmSync(dir, { recursive: true, force: true });
}
