// The calibrator on the real trajectories next to the repo
// (../shared/corpus/real-trajectories and real-trajectories-2, labels in each
// labels.json): with the shipped defaults every labelled loop is flagged and
// no healthy run is, in each set and in both halves of the split, and the
// audit's figures are the replay's.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import type { CalibrateOptions, CalibrateResult } from "../../router-ext/calibrate/run.ts";
import { median } from "../../shared/index.ts";
import { besideRepo } from "../helpers/beside-repo.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";

const first = besideRepo(["corpus", "real-trajectories"]);
const second = besideRepo(["corpus", "real-trajectories-2"]);
const CORPUS = first.path;
const CORPUS2 = second.path;
const present = first.present && second.present;

async function calibrate(extra: CalibrateOptions = {}) {
  const { out, err, ...outcome } = await calibrateCaptured({ exports: [CORPUS], json: true, ...extra });
  return { outcome, out, err };
}

// Whole-corpus replays with --split: about 1 s alone, past vitest's 5 s default at load 10.
describe.skipIf(!present)(
  (first.present ? second : first).title("the real-trajectories corpora"),
  { timeout: 60_000 },
  () => {
    let run: { outcome: CalibrateResult; out: string; err: string };

    test("every labelled loop is flagged and no healthy run is, per set and per half; the audit is the replay", async () => {
      run = await calibrate({ exports: [CORPUS, CORPUS2], split: true });
      expect(run.outcome.code, run.err).toBe(0);
      const { results, audit } = run.outcome;
      expect(audit?.sets.map((s) => s.name)).toEqual([
        join(CORPUS, "labels.json"),
        join(CORPUS2, "labels.json"),
        "all sets together",
      ]);
      for (const set of audit?.sets ?? []) {
        expect(set.falseFlags, set.name).toEqual([]);
        expect(set.missed, set.name).toEqual([]);
        for (const f of [set.all, set.halves?.A, set.halves?.B]) {
          expect(f?.loopsCaught, set.name).toBe(f?.loops);
          expect(f?.healthyFlagged, set.name).toBe(0);
        }
      }
      // The figures of corpus 2 recomputed from the replay and its labels file.
      const doc = JSON.parse(readFileSync(join(CORPUS2, "labels.json"), "utf8")) as Record<
        string,
        { label: string; note?: string }
      >;
      const loops = results.filter((r) => doc[r.id]?.label === "loop");
      const set2 = audit?.sets[1];
      expect(set2?.all.loops).toBe(loops.length);
      expect(set2?.all.healthy).toBe(results.filter((r) => doc[r.id]?.label === "healthy").length);
      expect(set2?.all.medianFirstFlag).toBe(median(loops.map((r) => r.first_flag_call as number)));
      const starts = loops.map((r) => Number(/^calls (\d+)-/.exec(doc[r.id]?.note ?? "")?.[1]));
      expect(set2?.loopStarts?.medianStart).toBe(median(starts));
      // Calls from each labelled start to the first flag: the targets (median <= 5, max <= 10).
      const fromStart = loops.map((r, i) => (r.first_flag_call as number) - (starts[i] as number));
      expect(set2?.all.medianFromStart).toBe(median(fromStart));
      expect(set2?.all.maxFromStart).toBe(Math.max(...fromStart));
      expect(set2?.all.medianFromStart).toBeLessThanOrEqual(5);
      expect(set2?.all.maxFromStart).toBeLessThanOrEqual(10);
      // The JSON on stdout is the same data.
      const json = JSON.parse(run.out) as { sessions: Array<{ id: string; worst: string }> };
      expect(json.sessions.map((s) => s.worst)).toEqual(results.map((r) => r.worst));
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
  },
);
