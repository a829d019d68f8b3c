// Calibrate's replay against the floor of reading the same data. Each
// opencode.db (opencode's own schema) is scanned bare with a JSON.parse of
// every part's data (the floor), read the least way any loader of this
// design can (each session's rows as the reader fetches them, parsed; then
// with every call's argument fingerprint too), read by the calibrator's loader (sessions
// turned into observations as they are read), judged (replay() of what it
// loaded), loaded and judged in one go (every session held, as --sweep needs), and read and
// judged tree by tree the way `stallguard calibrate --db`
// does, in this thread (--jobs 1) and across N threads (--jobs N: this one
// and N-1 workers, the worker bundled as stallguard ships it,
// router-ext/worker-file.ts). Two databases by default: synthetic sessions, and the shared corpora with the
// repo's recorded sets written to one db. The steps and the
// databases alternate in every round, so a loaded machine slows them alike;
// medians over the rounds. Then the same as a user runs it, each a fresh
// process (node's start-up and a cold JIT included): `stallguard calibrate
// --db` from the bundle `npm start` runs (built first), with --jobs 1 and with
// its default jobs, against a fresh process that scans and parses the parts.
//
//   npx tsx bench/core-replay.ts [--sessions 200] [--calls 500] [--repeats 5] [--flat] [--jobs N]
//   npx tsx bench/core-replay.ts --db path/to/opencode.db [--repeats 5]
//
// --db measures one database as it is (a copy of a real one): opened
// read-only, never changed. --flat writes one part per assistant message (the
// tool part alone) instead of the step-start, tool and step-finish parts
// opencode writes: fewer parts for the same calls, so the floor is smaller.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import Database from "better-sqlite3";
import { loadConfig } from "../router-ext/calibrate/config.ts";
import { defaultJobs } from "../router-ext/calibrate/replay-plan.ts";
import { replayFileSerially } from "../router-ext/calibrate/replay-serial.ts";
import { replayDb } from "../router-ext/calibrate/replay-workers.ts";
import { loadOpencodeDb, type SourceSession } from "../router-ext/calibrate/sources.ts";
import { unreadPart } from "../router-ext/opencode-db/part-rows.ts";
import { argumentFingerprint, canonicalJson, observeOptions, replay } from "../shared/index.ts";
import { type ExportDoc, syntheticSessions, writeOpencodeDb } from "./core-opencode-db.ts";
import { arg, defaultPolicy, fmt, gc, medianOf, printTable, timeMs, timeMsAsync } from "./core-stats.ts";

setFlagsFromString("--expose-gc");
const sessions = arg("sessions", 200);
const calls = arg("calls", 500);
const repeats = arg("repeats", 5);
const flat = process.argv.includes("--flat");
const dbArg = process.argv.indexOf("--db");
const givenDb = dbArg >= 0 ? process.argv[dbArg + 1] : undefined;
const jobs = arg("jobs", defaultJobs());
const policy = defaultPolicy();
const observe = observeOptions(policy);
const ROOT = join(import.meta.dirname, "..");
/** The shared corpora beside the repo and the repo's own sets, each an export directory. */
const CORPORA = [
  join(ROOT, "..", "shared", "corpus", "real-trajectories"),
  join(ROOT, "..", "shared", "corpus", "real-trajectories-2"),
  join(ROOT, "test", "fixtures", "external-trajectories"),
  join(ROOT, "test", "fixtures", "recorded"),
];

/** The bundle users run, and a process that only scans the parts and parses each (the floor, fresh). */
const CLI = join(ROOT, "dist", "stallguard.mjs");
const SCAN_PROCESS = `const D = require("better-sqlite3");
const db = new D(process.argv[1], { readonly: true, fileMustExist: true });
let n = 0;
for (const row of db.prepare("SELECT data FROM part").iterate()) n += JSON.parse(row.data) ? 1 : 0;
db.close();`;

/** The wall time of a fresh node process running `args` from the repo (its output dropped). */
function processMs(args: string[]): number {
  const start = performance.now();
  const run = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
  const ms = performance.now() - start;
  if (run.status !== 0)
    throw new Error(`node ${args.slice(0, 2).join(" ")} exited ${run.status}: ${run.stderr}`);
  return ms;
}

/** Every row of `sql` with its data column JSON.parsed, nothing kept: what reading costs at the least. */
function scan(dbPath: string, sql: string, parse: boolean): number {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  let n = 0;
  for (const row of db.prepare(sql).iterate() as Iterable<{ data: string }>)
    n += parse ? (JSON.parse(row.data) ? 1 : 0) : row.data.length;
  db.close();
  return n;
}

/**
 * The least any loader of this design does, session by session as the replay
 * reads: each session's part rows fetched (the step markers dropped unparsed,
 * as the reader drops them) and its message rows fetched, with the reader's
 * queries (router-ext/opencode-db/reader.ts statements()), each kept row
 * JSON.parsed; with `fingerprint`, also every finished tool call's argument
 * fingerprint (canonical JSON, sha256), which the detection needs of every
 * call. Nothing is converted or judged: the replay's own floor, beside the
 * bare scan's.
 */
function leastRead(dbPath: string, fingerprint: boolean): number {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  const parts = db.prepare("SELECT id, message_id, data FROM part WHERE session_id = ?").raw();
  const messages = db
    .prepare("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id")
    .raw();
  let n = 0;
  for (const id of db.prepare("SELECT id FROM session").pluck().all() as string[]) {
    for (const [, , data] of parts.all(id) as string[][]) {
      if (unreadPart(data)) continue;
      const part = JSON.parse(data as string);
      const state = part.state ?? {};
      if (fingerprint && part.type === "tool" && (state.status === "completed" || state.status === "error"))
        n += argumentFingerprint(part.tool, canonicalJson(state.input)).length;
      else n++;
    }
    for (const [, data] of messages.all(id) as string[][]) n += JSON.parse(data as string) ? 1 : 0;
  }
  db.close();
  return n;
}

function count(dbPath: string, sql: string): number {
  const db = new Database(dbPath, { readonly: true, fileMustExist: true });
  const n = (db.prepare(sql).get() as { n: number }).n;
  db.close();
  return n;
}

/** The export documents of the corpora directories that exist, each session once. */
function corporaDocs(): ExportDoc[] {
  const docs: ExportDoc[] = [];
  const seen = new Set<string>();
  for (const dir of CORPORA.filter((d) => existsSync(d))) {
    for (const f of readdirSync(dir).sort()) {
      if (!f.endsWith(".json") || f === "labels.json") continue;
      const doc = JSON.parse(readFileSync(join(dir, f), "utf8")) as ExportDoc | ExportDoc[];
      for (const d of Array.isArray(doc) ? doc : [doc]) {
        if (!d?.info?.id || seen.has(d.info.id)) continue;
        seen.add(d.info.id);
        docs.push(d);
      }
    }
  }
  return docs;
}

interface Target {
  name: string;
  path: string;
  toolParts: number;
  times: Record<string, number[]>;
  flagged: number;
}

function describe(t: Target): string {
  const n = (sql: string) => fmt(count(t.path, sql), 0);
  return `${t.name}: ${n("SELECT count(*) AS n FROM session")} sessions, ${fmt(t.toolParts, 0)} tool parts, ${n("SELECT count(*) AS n FROM part")} parts, ${n("SELECT count(*) AS n FROM message")} messages, ${fmt(statSync(t.path).size / 1e6, 1)} MB`;
}

/**
 * One round of every step on one database. Each step's CPU time (all the
 * process's threads) is kept beside its wall time: on a shared machine the
 * wall time also counts the time the process waited for a core.
 */
async function round(t: Target): Promise<void> {
  let cpu = process.cpuUsage();
  const time = (k: string, ms: number) => {
    const used = process.cpuUsage(cpu);
    for (const [key, v] of [
      [k, ms],
      [`${k}.cpu`, (used.user + used.system) / 1000],
    ] as const) {
      t.times[key] = t.times[key] ?? [];
      t.times[key].push(v);
    }
  };
  const gcNow = () => {
    gc();
    cpu = process.cpuUsage();
  };
  gcNow();
  time(
    "bare",
    timeMs(() => scan(t.path, "SELECT data FROM part", false)),
  );
  gcNow();
  time(
    "floor",
    timeMs(() => scan(t.path, "SELECT data FROM part", true)),
  );
  gcNow();
  time(
    "messages",
    timeMs(() => scan(t.path, "SELECT data FROM message", true)),
  );
  gcNow();
  time(
    "reads",
    timeMs(() => leastRead(t.path, false)),
  );
  gcNow();
  time(
    "fingerprints",
    timeMs(() => leastRead(t.path, true)),
  );
  gcNow();
  let loaded: SourceSession[] = [];
  time(
    "load",
    await timeMsAsync(async () => {
      loaded = (await loadOpencodeDb(t.path, { observe })).sessions;
    }),
  );
  gcNow();
  time(
    "judge",
    timeMs(() => {
      t.flagged = replay(loaded, policy).filter((x) => x.worst !== "ok").length;
    }),
  );
  loaded = [];
  gcNow();
  time(
    "whole",
    await timeMsAsync(async () => {
      replay((await loadOpencodeDb(t.path, { observe })).sessions, policy);
    }),
  );
  gcNow();
  time(
    "both",
    timeMs(() => replayFileSerially(t.path, { policy, timeline: false }).results.length),
  );
  gcNow();
  time("workers", await timeMsAsync(() => acrossWorkers(t.path)));
  cold(t);
}

/** One fresh process of each: the floor's scan, the CLI with --jobs 1, the CLI with its default jobs. */
function cold(t: Target): void {
  const keep = (k: string, ms: number) => {
    t.times[k] = t.times[k] ?? [];
    t.times[k].push(ms);
  };
  keep("cold.floor", processMs(["-e", SCAN_PROCESS, t.path]));
  keep("cold.one", processMs([CLI, "calibrate", "--db", t.path, "--jobs", "1"]));
  keep("cold.default", processMs([CLI, "calibrate", "--db", t.path]));
}

/** calibrate --db --jobs N's read and judge: the trees across `jobs` threads (this one and workers), on any db size. */
async function acrossWorkers(path: string): Promise<void> {
  const { config } = loadConfig({ env: {} });
  const run = await replayDb(path, { jobs, timeline: false, config, minRows: 0 });
  if (run.workers < 2) throw new Error(`${path}: no workers started`);
}

function report(t: Target): void {
  const m = (k: string) => medianOf(t.times[k] ?? []);
  const floor = m("floor");
  const cpuFloor = m("floor.cpu");
  const row = (label: string, k: string) => [
    label,
    fmt(m(k), 0),
    fmt(t.toolParts / (m(k) / 1000), 0),
    fmt(m(k) / floor),
    fmt(m(`${k}.cpu`), 0),
    fmt(m(`${k}.cpu`) / cpuFloor),
  ];
  console.log(`\n${describe(t)}`);
  printTable(
    ["step", "median ms", "tool calls/s", "x floor", "cpu ms", "cpu x floor"],
    [
      row("scan of the part table, no parse (SELECT data)", "bare"),
      row("floor: scan of the part table + JSON.parse of each", "floor"),
      row("scan of the message table + JSON.parse of each", "messages"),
      row("least read: each session's parts (no step markers) and messages, parsed", "reads"),
      row("least read + every call's argument fingerprint (canonical JSON, sha256)", "fingerprints"),
      row("loader: --db read into observations, one transaction", "load"),
      row("judge: replay() of the loaded sessions", "judge"),
      row("loader, then judge, every session held (--sweep, --margins, labels)", "whole"),
      row("read and judged tree by tree (calibrate --db --jobs 1)", "both"),
      row(`loader + judge across ${jobs} threads (calibrate --db --jobs ${jobs})`, "workers"),
    ],
  );
  console.log(
    `${t.flagged} session(s) flagged; loader + judge tree by tree = ${fmt(m("both") / floor)}x the floor, ${fmt(m("both.cpu") / cpuFloor)}x in CPU time (target: at most 2x); across ${jobs} threads ${fmt(m("workers") / floor)}x wall, ${fmt(m("workers.cpu") / cpuFloor)}x CPU (the workers start cold every run, the rows above are warm from the rounds before). No loader of this design goes below the least read (${fmt(m("reads") / floor)}x) or, with the fingerprints every call needs, ${fmt(m("fingerprints") / floor)}x, before one call is converted or judged`,
  );
  const floorProcess = m("cold.floor");
  const fresh = (label: string, k: string) => [label, fmt(m(k), 0), fmt(m(k) / floorProcess)];
  console.log("");
  printTable(
    ["as a user runs it: a fresh process each", "median ms", "x floor process"],
    [
      fresh("floor process: node, the part table scanned, JSON.parse of each", "cold.floor"),
      fresh("stallguard calibrate --db --jobs 1 (the built CLI)", "cold.one"),
      fresh(`stallguard calibrate --db (its default jobs: ${defaultJobs()} at most)`, "cold.default"),
    ],
  );
}

const built = spawnSync(process.execPath, [join(ROOT, "deploy", "build.mjs")], { stdio: "inherit" });
if (built.status !== 0) throw new Error("npm run build failed");
const dir = mkdtempSync(join(tmpdir(), "stallguard-bench-replay-"));
try {
  const targets: Target[] = [];
  const target = (name: string, path: string, toolParts: number) =>
    targets.push({ name, path, toolParts, times: {}, flagged: 0 });
  const tools = (path: string) =>
    count(path, `SELECT count(*) AS n FROM part WHERE data LIKE '%"type":"tool"%'`);
  if (givenDb) target(givenDb, givenDb, tools(givenDb));
  else {
    const synthetic = join(dir, "synthetic.db");
    const ms = timeMs(() =>
      writeOpencodeDb(synthetic, syntheticSessions(sessions, calls, { loopEvery: 10, steps: !flat })),
    );
    target(
      `synthetic opencode.db (${flat ? "flat: one part per message" : "opencode's step-start, tool, step-finish parts"}, every 10th session a read loop, built in ${fmt(ms / 1000, 1)} s)`,
      synthetic,
      sessions * calls,
    );
    const docs = corporaDocs();
    if (docs.length) {
      const corpora = join(dir, "corpora.db");
      writeOpencodeDb(corpora, docs);
      target("the shared corpora and the repo's sets written to one opencode.db", corpora, tools(corpora));
    }
  }
  const loads: number[] = [];
  for (let r = 0; r < repeats; r++) {
    loads.push(loadavg()[0] as number);
    for (const t of targets) await round(t);
  }
  for (const t of targets) report(t);
  console.log(
    `\nmedian of ${repeats} rounds (steps and databases alternating), node ${process.version}, load average ${fmt(Math.min(...loads), 1)} to ${fmt(Math.max(...loads), 1)}`,
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
