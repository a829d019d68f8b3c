// Replay speed on a large opencode.db: a synthetic database of 100k tool
// calls (opencode's own schema) read by the calibrator's loader and replayed
// through the core, next to a plain scan of the part table. Replay should be
// limited by reading the data, not by judging. Medians over repeats.
//
//   npx tsx bench/core-replay.ts [--sessions 200] [--calls 500] [--repeats 3]
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { loadOpencodeDb, type SourceSession } from "../router-ext/calibrate/sources.ts";
import { outcomes, prepare } from "../router-ext/calibrate/sweep.ts";
import { replay } from "../shared/index.ts";
import { syntheticSessions, writeOpencodeDb } from "./core-opencode-db.ts";
import { arg, defaultPolicy, fmt, medianOf, printTable, timeMs, timeMsAsync } from "./core-stats.ts";

const _ROOT = join(import.meta.dirname, "..");
const sessions = arg("sessions", 200);
const calls = arg("calls", 500);
const repeats = arg("repeats", 3);
const policy = defaultPolicy();

const dir = mkdtempSync(join(tmpdir(), "stallguard-bench-replay-"));
try {
  const dbPath = join(dir, "opencode.db");
  const buildMs = timeMs(() =>
    writeOpencodeDb(dbPath, syntheticSessions(sessions, calls, { loopEvery: 10 })),
  );
  const total = sessions * calls;
  console.log(
    `synthetic opencode.db: ${sessions} sessions x ${calls} calls = ${fmt(total, 0)} tool calls, ${fmt(statSync(dbPath).size / 1e6, 1)} MB, built in ${fmt(buildMs / 1000, 1)} s`,
  );

  const t: Record<string, number[]> = { scan: [], parse: [], load: [], replay: [], convert: [], judge: [] };
  let flagged = 0;
  for (let r = 0; r < repeats; r++) {
    t.scan?.push(
      timeMs(() => {
        const db = new Database(dbPath, { readonly: true, fileMustExist: true });
        let bytes = 0;
        for (const row of db.prepare("SELECT data FROM part").iterate() as Iterable<{ data: string }>)
          bytes += row.data.length;
        db.close();
        return bytes;
      }),
    );
    t.parse?.push(
      timeMs(() => {
        const db = new Database(dbPath, { readonly: true, fileMustExist: true });
        let n = 0;
        for (const row of db.prepare("SELECT data FROM part").iterate() as Iterable<{ data: string }>)
          n += JSON.parse(row.data) ? 1 : 0;
        for (const row of db.prepare("SELECT data FROM message").iterate() as Iterable<{ data: string }>)
          n += JSON.parse(row.data) ? 1 : 0;
        db.close();
        return n;
      }),
    );
    let loaded: SourceSession[] = [];
    t.load?.push(
      await timeMsAsync(async () => {
        loaded = (await loadOpencodeDb(dbPath)).sessions;
      }),
    );
    t.replay?.push(
      timeMs(() => {
        flagged = replay(loaded, policy).filter((x) => x.worst !== "ok").length;
      }),
    );
    let prepared: ReturnType<typeof prepare> | null = null;
    t.convert?.push(
      timeMs(() => {
        prepared = prepare(loaded, policy);
      }),
    );
    t.judge?.push(
      timeMs(() => outcomes(prepared as unknown as ReturnType<typeof prepare>, policy, policy.thresholds)),
    );
  }
  const m = (k: string) => medianOf(t[k] ?? []);
  const rate = (ms: number) => fmt(total / (ms / 1000), 0);
  const scan = m("scan");
  printTable(
    ["step", "median ms", "tool calls/s", "x plain scan"],
    [
      ["plain scan of the part table (SELECT data)", fmt(scan, 0), rate(scan), "1.00"],
      [
        "scan + JSON.parse of part and message rows",
        fmt(m("parse"), 0),
        rate(m("parse")),
        fmt(m("parse") / scan),
      ],
      ["loader: --db read, one transaction", fmt(m("load"), 0), rate(m("load")), fmt(m("load") / scan)],
      ["replay(): convert + judge", fmt(m("replay"), 0), rate(m("replay")), fmt(m("replay") / scan)],
      [
        "  of which convert (adapter, hashing)",
        fmt(m("convert"), 0),
        rate(m("convert")),
        fmt(m("convert") / scan),
      ],
      ["  of which judge (SessionForest)", fmt(m("judge"), 0), rate(m("judge")), fmt(m("judge") / scan)],
      [
        "end to end: load + replay",
        fmt(m("load") + m("replay"), 0),
        rate(m("load") + m("replay")),
        fmt((m("load") + m("replay")) / scan),
      ],
    ],
  );
  console.log(
    `${flagged} of ${sessions} sessions flagged (every 10th is a synthetic read loop); median of ${repeats} repeats, node ${process.version}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
