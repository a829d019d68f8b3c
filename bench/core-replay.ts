// Calibrate's replay against the floor of reading the same data: one
// opencode.db (opencode's own schema, synthetic sessions) scanned bare with a
// JSON.parse of every part's data (the floor), read by the calibrator's
// loader, judged (replay(): convert + judge), and loaded and judged in one go
// the way `stallguard calibrate --db` does. The steps alternate in every
// repeat, so a loaded machine slows them alike; medians over the repeats.
//
//   npx tsx bench/core-replay.ts [--sessions 200] [--calls 500] [--repeats 5] [--flat]
//   npx tsx bench/core-replay.ts --db path/to/opencode.db [--repeats 5]
//
// --db measures a database as it is (a copy of a real one, or the corpora
// written to one): opened read-only, never changed.
// --flat writes one part per assistant message (the tool part alone) instead of
// the step-start, tool and step-finish parts opencode writes: fewer parts for
// the same calls, so the floor is smaller against the same work.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import Database from "better-sqlite3";
import { loadOpencodeDb, type SourceSession } from "../router-ext/calibrate/sources.ts";
import { prepare, tallies } from "../router-ext/calibrate/sweep.ts";
import { replay } from "../shared/index.ts";
import { syntheticSessions, writeOpencodeDb } from "./core-opencode-db.ts";
import { arg, defaultPolicy, fmt, gc, medianOf, printTable, timeMs, timeMsAsync } from "./core-stats.ts";

setFlagsFromString("--expose-gc");
const sessions = arg("sessions", 200);
const calls = arg("calls", 500);
const repeats = arg("repeats", 5);
const flat = process.argv.includes("--flat");
const dbArg = process.argv.indexOf("--db");
const givenDb = dbArg >= 0 ? process.argv[dbArg + 1] : undefined;
const policy = defaultPolicy();

/** Every row of `sql` with its data column JSON.parsed, nothing kept: what reading costs at the least. */
function scan(dbPath: string, sql: string, parse: boolean): number {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  let n = 0;
  for (const row of db.prepare(sql).iterate() as Iterable<{ data: string }>)
    n += parse ? (JSON.parse(row.data) ? 1 : 0) : row.data.length;
  db.close();
  return n;
}

const dir = mkdtempSync(join(tmpdir(), "stallguard-bench-replay-"));
try {
  const dbPath = givenDb ?? join(dir, "opencode.db");
  const buildMs = givenDb
    ? 0
    : timeMs(() =>
        writeOpencodeDb(dbPath, syntheticSessions(sessions, calls, { loopEvery: 10, steps: !flat })),
      );
  const count = (sql: string) => {
    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    const n = (db.prepare(sql).get() as { n: number }).n;
    db.close();
    return n;
  };
  const total = givenDb
    ? count(`SELECT count(*) AS n FROM part WHERE data LIKE '%"type":"tool"%'`)
    : sessions * calls;
  const what = givenDb
    ? `${dbPath}: ${fmt(count("SELECT count(*) AS n FROM session"), 0)} sessions, about ${fmt(total, 0)} tool parts`
    : `synthetic opencode.db (${flat ? "flat: one part per message" : "opencode's step-start, tool, step-finish parts"}): ${sessions} sessions x ${calls} calls = ${fmt(total, 0)} tool calls`;
  console.log(
    `${what}, ${fmt(count("SELECT count(*) AS n FROM part"), 0)} parts, ${fmt(count("SELECT count(*) AS n FROM message"), 0)} messages, ${fmt(statSync(dbPath).size / 1e6, 1)} MB${givenDb ? "" : `, built in ${fmt(buildMs / 1000, 1)} s`}`,
  );

  const t: Record<string, number[]> = {};
  const time = (k: string, ms: number) => {
    t[k] = t[k] ?? [];
    t[k].push(ms);
  };
  let flagged = 0;
  for (let r = 0; r < repeats; r++) {
    gc();
    time(
      "bare",
      timeMs(() => scan(dbPath, "SELECT data FROM part", false)),
    );
    gc();
    time(
      "floor",
      timeMs(() => scan(dbPath, "SELECT data FROM part", true)),
    );
    gc();
    time(
      "messages",
      timeMs(() => scan(dbPath, "SELECT data FROM message", true)),
    );
    gc();
    let loaded: SourceSession[] = [];
    time(
      "load",
      await timeMsAsync(async () => {
        loaded = (await loadOpencodeDb(dbPath)).sessions;
      }),
    );
    gc();
    time(
      "replay",
      timeMs(() => {
        flagged = replay(loaded, policy).filter((x) => x.worst !== "ok").length;
      }),
    );
    gc();
    let prepared: ReturnType<typeof prepare> | null = null;
    time(
      "convert",
      timeMs(() => {
        prepared = prepare(loaded, policy);
      }),
    );
    gc();
    time(
      "judge",
      timeMs(() => tallies(prepared as unknown as ReturnType<typeof prepare>, policy, policy.thresholds)),
    );
    prepared = null;
    loaded = [];
    gc();
    time(
      "both",
      await timeMsAsync(async () => {
        replay((await loadOpencodeDb(dbPath)).sessions, policy);
      }),
    );
  }
  const m = (k: string) => medianOf(t[k] ?? []);
  const floor = m("floor");
  const row = (label: string, k: string) => [
    label,
    fmt(m(k), 0),
    fmt(total / (m(k) / 1000), 0),
    fmt(m(k) / floor),
  ];
  printTable(
    ["step", "median ms", "tool calls/s", "x floor"],
    [
      row("scan of the part table, no parse (SELECT data)", "bare"),
      row("floor: scan of the part table + JSON.parse of each", "floor"),
      row("scan of the message table + JSON.parse of each", "messages"),
      row("loader: --db read, one transaction", "load"),
      row("judge: replay() of the loaded sessions", "replay"),
      row("  of which convert (adapter, hashing)", "convert"),
      row("  of which judge (SessionForest)", "judge"),
      row("loader + judge in one go (calibrate --db)", "both"),
    ],
  );
  console.log(
    `${flagged} session(s) flagged${givenDb ? "" : ` of ${sessions} (every 10th is a synthetic read loop)`}; median of ${repeats} repeats, node ${process.version}; target: loader + judge at most 2x the floor`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
