// Judge cost per tool event: SessionForest.observe on an already-converted
// event, the adapter (fromToolPart: fingerprints, targets, landed inputs), and
// both together, next to the floor of only hashing the same arguments with
// sha256. Medians over repeats.
//
//   npx tsx bench/core-judge-cost.ts [--sessions 20] [--calls 500] [--repeats 5]

import { join } from "node:path";
import {
  canonicalJson,
  fromToolPart,
  type Observation,
  observationsFromMessages,
  SessionForest,
  sha256,
} from "../shared/index.ts";
import { type ExportDoc, syntheticSession } from "./core-opencode-db.ts";
import { arg, defaultPolicy, fmt, medianOf, percentile, printTable, timeEach } from "./core-stats.ts";

const _ROOT = join(import.meta.dirname, "..");
const sessions = arg("sessions", 20);
const calls = arg("calls", 500);
const repeats = arg("repeats", 5);

const policy = defaultPolicy();

// Sessions interleaved call by call, the way a live forest sees them.
const docs: ExportDoc[] = Array.from({ length: sessions }, (_, i) =>
  syntheticSession(i, calls, { loopEvery: 5 }),
);
type Item = { part: Record<string, unknown>; sessionId: string; created: number };
const items: Item[] = [];
for (let c = 1; c <= calls; c++) {
  for (const d of docs) {
    const m = d.messages[c];
    if (m)
      items.push({
        part: m.parts[0] as Record<string, unknown>,
        sessionId: d.info.id,
        created: m.info.time ? (m.info.time as { created: number }).created : 0,
      });
  }
}
const observations: Observation[] = docs
  .flatMap((d) =>
    observationsFromMessages(
      { id: d.info.id, parentId: null, directory: "/PROJECT_DIR" },
      d.messages,
      policy,
    ),
  )
  .sort((a, b) => (a.kind === "tool" ? a.call.time : a.time) - (b.kind === "tool" ? b.call.time : b.time));
const toolObs = observations.filter((o) => o.kind === "tool").length;

const argsOf = (it: Item) => (it.part.state as { input: unknown }).input;
const toolOf = (it: Item) => it.part.tool as string;
const ctx = (it: Item) => ({
  sessionId: it.sessionId,
  parentId: null,
  agent: "build",
  time: it.created,
  directory: "/PROJECT_DIR",
  testPatterns: policy.testPatterns,
});

interface Figures {
  median: number;
  p99: number;
}
const runs: Record<string, Figures[]> = {
  floor: [],
  fingerprint: [],
  adapter: [],
  observe: [],
  other: [],
  total: [],
};
for (let r = 0; r < repeats + 1; r++) {
  const floor = timeEach(items, (it) => sha256(JSON.stringify(argsOf(it))));
  const fingerprint = timeEach(items, (it) => sha256(toolOf(it) + canonicalJson(argsOf(it))));
  const adapter = timeEach(items, (it) => fromToolPart(it.part, ctx(it)));
  let forest = new SessionForest(policy);
  // observe: the whole stream (turns, usage, tools); timed per observation, reported for tool events.
  const observeTool: number[] = [];
  const observeOther: number[] = [];
  for (const o of observations) {
    const t0 = process.hrtime.bigint();
    forest.observe(o);
    const ns = Number(process.hrtime.bigint() - t0);
    (o.kind === "tool" ? observeTool : observeOther).push(ns);
  }
  observeTool.sort((a, b) => a - b);
  observeOther.sort((a, b) => a - b);
  forest = new SessionForest(policy);
  const total = timeEach(items, (it) => {
    const call = fromToolPart(it.part, ctx(it));
    return call ? forest.observe({ kind: "tool", call }) : null;
  });
  if (r === 0) continue; // warm-up
  const fig = (ns: number[], per = 1): Figures => ({
    median: (percentile(ns, 50) / 1000) * per,
    p99: (percentile(ns, 99) / 1000) * per,
  });
  runs.floor?.push(fig(floor));
  runs.fingerprint?.push(fig(fingerprint));
  runs.adapter?.push(fig(adapter));
  runs.observe?.push(fig(observeTool));
  runs.other?.push(fig(observeOther));
  runs.total?.push(fig(total));
}

const med = (k: string, f: keyof Figures) => medianOf((runs[k] ?? []).map((x) => x[f]));
const floorMed = med("floor", "median");
const floorP99 = med("floor", "p99");
console.log(
  `judge cost per tool event: ${sessions} sessions x ${calls} calls interleaved (${items.length} tool events, ${observations.length} observations incl. turns/usage), median of ${repeats} repeats, node ${process.version}`,
);
/** One step's row: its median and p99, and both against the floor. */
const stepRow = (label: string, key: Parameters<typeof med>[0]) => [
  label,
  fmt(med(key, "median")),
  fmt(med(key, "p99")),
  fmt(med(key, "median") / floorMed),
  fmt(med(key, "p99") / floorP99),
];
printTable(
  ["step", "median us", "p99 us", "median / floor", "p99 / floor"],
  [
    ["floor: sha256(JSON args)", fmt(floorMed), fmt(floorP99), "1.00", "1.00"],
    stepRow("exact fingerprint (canonical JSON + sha256)", "fingerprint"),
    stepRow("adapter fromToolPart (fp, nfp, target, diff)", "adapter"),
    stepRow("SessionForest.observe, tool event", "observe"),
    stepRow("SessionForest.observe, turn/usage/user", "other"),
    stepRow("adapter + observe, tools only stream", "total"),
  ],
);
console.log(
  `(${toolObs} tool observations; the last row converts and judges each tool event of the same interleaved stream\nwithout its turn/usage observations; per-event timings include ~0.05 us of timer overhead)`,
);
