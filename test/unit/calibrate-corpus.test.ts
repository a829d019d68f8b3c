// The calibrator on the 22 real trajectories next to the repo
// (../shared/corpus/real-trajectories, labels in its labels.json): every
// labelled loop is flagged, no healthy run is, and loops are caught early.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { type CalibrateOutcome, runCalibrate } from "../../router-ext/calibrate/run.ts";

const CORPUS = join(import.meta.dirname, "..", "..", "..", "shared", "corpus", "real-trajectories");
const present = existsSync(CORPUS);
if (!present) {
  console.warn(
    `calibrate-corpus: skipped: the real-trajectories corpus is not at ${CORPUS} (expected as ../shared/corpus/real-trajectories next to the repo)`,
  );
}

async function calibrate(extra: Parameters<typeof runCalibrate>[0] = {}) {
  let out = "";
  let err = "";
  const outcome = await runCalibrate(
    { exports: [CORPUS], json: true, ...extra },
    {
      stdout: { write: (s: string) => (out += s) },
      stderr: { write: (s: string) => (err += s) },
      env: {},
      now: () => 0,
    },
  );
  return { outcome, out, err };
}

describe.skipIf(!present)("the real-trajectories corpus", () => {
  let run: { outcome: CalibrateOutcome; out: string; err: string };

  test("every labelled loop is flagged, no healthy run is, median first flag <= 20", async () => {
    run = await calibrate();
    expect(run.outcome.code, run.err).toBe(0);
    const { results, labels } = run.outcome;
    expect(results).toHaveLength(22);
    const loops = results.filter((r) => labels[r.id] === "loop");
    const healthy = results.filter((r) => labels[r.id] === "healthy");
    expect(loops).toHaveLength(10);
    expect(healthy).toHaveLength(10);
    expect(loops.filter((r) => r.worst === "ok").map((r) => r.id)).toEqual([]);
    expect(healthy.filter((r) => r.worst !== "ok").map((r) => r.id)).toEqual([]);
    const firsts = loops.map((r) => r.first_flag_call as number).sort((a, b) => a - b);
    const median = (firsts[4] as number) / 2 + (firsts[5] as number) / 2;
    // About 14.5 with the shipped defaults; a regression bound, not a target.
    expect(median).toBeLessThanOrEqual(20);
    // The JSON on stdout is the same data.
    const doc = JSON.parse(run.out) as { sessions: Array<{ id: string; worst: string }> };
    expect(doc.sessions.map((s) => s.worst)).toEqual(results.map((r) => r.worst));
  });

  test("a small sweep proposes thresholds that still catch every loop and flag nothing healthy", async () => {
    const { outcome, err } = await calibrate({ sweep: true, grid: "stall_turns=2,4;dup_warn=0.4,0.5" });
    expect(outcome.code, err).toBe(0);
    const s = outcome.sweep;
    expect(s?.candidates).toBe(4);
    expect(s?.proposed?.loopsCaught).toBe(10);
    expect(s?.proposed?.healthyFlagged).toBe(0);
    expect(s?.current.loopsCaught).toBe(10);
    expect(s?.proposed?.medianCallsToDetection).toBeLessThanOrEqual(
      s?.current.medianCallsToDetection as number,
    );
  });
});
