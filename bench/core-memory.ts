import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { fromToolPart, SessionForest, sha256 } from "../shared/index.ts";
import { arg, defaultPolicy, fmt, medianOf, printTable } from "./core-stats.ts";

setFlagsFromString("--expose-gc");
const gcFn = runInNewContext("gc") as () => void;
const gc = () => {
  gcFn();
  gcFn();
};

const _ROOT = join(import.meta.dirname, "..");
const policy = defaultPolicy();
const sessions = arg("sessions", 40);
const repeats = arg("repeats", 3);
const CHECKPOINTS = [100, 1000, 10_000, 50_000];
/** Distinct files the calls touch; 0 = a new file on most calls (the worst case for the seen-target map). */
const targets = process.argv.includes("--targets") ? arg("targets", 0) : 0;

/** Call c of session s: every call has new arguments (the worst case for memory). */
function part(s: number, c: number): Record<string, unknown> {
  const n = targets ? c % targets : (c * 7919) % 5003;
  const file = `/PROJECT_DIR/src/dir${n % 97}/mod${n}.ts`;
  const kind = c % 4;
  const time = { start: c * 1000, end: c * 1000 + 10 };
  if (kind === 0)
    return {
      type: "tool",
      tool: "edit",
      callID: `c${s}_${c}`,
      state: {
        status: "completed",
        input: { filePath: file, oldString: `a${c}`, newString: `b${c}` },
        metadata: { diff: `--- ${file}\n+++ ${file}\n@@ -1 +1 @@\n-a${c}\n+b${c}\n` },
        time,
      },
    };
  if (kind === 1)
    return {
      type: "tool",
      tool: "bash",
      callID: `c${s}_${c}`,
      state: {
        status: "completed",
        input: { command: `grep -n item${c} ${file}` },
        metadata: { exit: c % 3 ? 0 : 1 },
        time,
      },
    };
  return {
    type: "tool",
    tool: "read",
    callID: `c${s}_${c}`,
    state: { status: "completed", input: { filePath: file, offset: c, limit: 50 }, metadata: {}, time },
  };
}

function heap(): number {
  gc();
  return process.memoryUsage().heapUsed;
}

function measure(): { tracker: number[]; floor: number[] } {
  const forest = new SessionForest(policy, { maxSessions: sessions * 2 });
  const history: Array<Set<string>> = Array.from({ length: sessions }, () => new Set());
  const tracker: number[] = [];
  const floor: number[] = [];
  let done = 0;
  const base = heap();
  let floorBytes = 0;
  for (const cp of CHECKPOINTS) {
    // Grow every session to cp events (turns every 3 calls, like a real agent).
    for (let s = 0; s < sessions; s++) {
      const sessionId = `ses_${s}`;
      for (let c = done + 1; c <= cp; c++) {
        if (c % 3 === 1)
          forest.observe({ kind: "turn", sessionId, parentId: null, agent: "build", time: c * 1000 });
        const call = fromToolPart(part(s, c), {
          sessionId,
          parentId: null,
          agent: "build",
          directory: "/PROJECT_DIR",
          testPatterns: policy.testPatterns,
        });
        if (call) forest.observe({ kind: "tool", call });
      }
    }
    const after = heap();
    tracker.push((after - base - floorBytes) / sessions);
    // The floor: the sha256 of each call's arguments, kept per session.
    const h0 = heap();
    for (let s = 0; s < sessions; s++) {
      for (let c = done + 1; c <= cp; c++) {
        const p = part(s, c) as { tool: string; state: { input: unknown } };
        history[s]?.add(sha256(p.tool + JSON.stringify(p.state.input)));
      }
    }
    floorBytes += heap() - h0;
    floor.push(floorBytes / sessions);
    done = cp;
  }
  if (forest.size !== sessions || history.length !== sessions) throw new Error("lost sessions");
  return { tracker, floor };
}

const runs = Array.from({ length: repeats }, () => measure());
console.log(
  `resident bytes per session (heap delta after GC, ${sessions} sessions, ${targets ? `${targets} distinct files` : "up to 5003 distinct files"}, median of ${repeats} repeats, window ${policy.thresholds.window}, node ${process.version})`,
);
printTable(
  ["events per session", "SessionForest bytes", "floor: sha256 per call", "forest / floor"],
  CHECKPOINTS.map((cp, i) => {
    const t = medianOf(runs.map((r) => r.tracker[i] as number));
    const f = medianOf(runs.map((r) => r.floor[i] as number));
    return [fmt(cp, 0), fmt(t, 0), fmt(f, 0), fmt(t / f)];
  }),
);
const at10k = medianOf(runs.map((r) => r.tracker[2] as number));
const at50k = medianOf(runs.map((r) => r.tracker[3] as number));
console.log(
  `growth from 10k to 50k events: ${fmt(((at50k - at10k) / at10k) * 100, 1)}% (bounded: no per-call history)`,
);
