// The fast sweep driver must agree with the core's own replay and sweep: it
// only skips re-converting stored messages per candidate.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { loadExports } from "../../router-ext/calibrate/sources.ts";
import {
  DEFAULT_AXES,
  distance,
  evaluatePrepared,
  gridOf,
  parseGrid,
  prepare,
  rank,
  runSweep,
  tallies,
} from "../../router-ext/calibrate/sweep.ts";
import { evaluateCandidate, parseConfig, policyFromConfig, replay, sweep } from "../../shared/index.ts";
import { besideRepo } from "../helpers/beside-repo.ts";

const REPO = join(import.meta.dirname, "..", "..");
const real = besideRepo(["corpus", "real-trajectories"]);
const CORPUS = real.path;
const RECORDED = join(REPO, "test", "fixtures", "recorded");

function defaults() {
  const r = parseConfig([
    { source: "config.yaml", text: readFileSync(join(REPO, "config", "config.yaml"), "utf8") },
  ]);
  if (!r.ok) throw new Error("defaults do not parse");
  return policyFromConfig(r.config);
}
const policy = defaults();

describe("prepared replay agrees with shared/replay.ts", () => {
  const { sessions, labels } = loadExports([RECORDED]);
  const prepared = prepare(sessions, policy);

  test("worst verdict and first flag per session, under several candidates", () => {
    for (const candidate of [
      {},
      { stall_turns: 2, top_warn: 4 },
      { dup_warn: 0.9, top_warn: 30, fail_warn: 20 },
    ]) {
      const thresholds = { ...policy.thresholds, ...candidate };
      const fast = tallies(prepared, policy, thresholds);
      const slow = replay(sessions, { ...policy, thresholds });
      for (const r of slow) {
        expect({
          id: r.id,
          worst: fast.get(r.id)?.worst,
          first: fast.get(r.id)?.firstFlag,
          calls: fast.get(r.id)?.calls,
        }).toEqual({
          id: r.id,
          worst: r.worst,
          first: r.first_flag_call,
          calls: r.calls,
        });
      }
      expect(evaluatePrepared(prepared, labels, policy, candidate)).toEqual(
        evaluateCandidate(sessions, labels, policy, candidate),
      );
    }
  });

  test("the same proposal as shared/sweep.ts on a small grid", () => {
    const grid = gridOf({ stall_turns: [2, 4], top_warn: [4, 12] });
    const slow = sweep(sessions, labels, policy, grid);
    const fast = runSweep(prepared, labels, policy, grid);
    expect(fast.rows).toEqual(slow.rows);
    expect(fast.earliest).toEqual(slow.proposed);
  });

  test.skipIf(!real.present)(real.title("agrees on the real corpus too"), () => {
    const corpus = loadExports([CORPUS]);
    const prep = prepare(corpus.sessions, policy);
    const candidate = { stall_turns: 2, dup_warn: 0.5 };
    expect(evaluatePrepared(prep, corpus.labels, policy, candidate)).toEqual(
      evaluateCandidate(corpus.sessions, corpus.labels, policy, candidate),
    );
  });
});

describe("ranking", () => {
  const row = (thresholds: Record<string, number>, caught: number, flagged: number, med: number | null) => ({
    thresholds,
    loops: 3,
    loopsCaught: caught,
    healthy: 2,
    healthyFlagged: flagged,
    medianCallsToDetection: med,
    maxCallsToDetection: med,
  });
  test("drops candidates that flag a healthy session, then most caught, earliest, closest", () => {
    const base = policy.thresholds;
    const ranked = rank(
      [
        row({ stall_turns: 1 }, 3, 1, 2),
        row({ stall_turns: 8 }, 2, 0, 5),
        row({ stall_turns: 6 }, 3, 0, 9),
        row({ stall_turns: 5 }, 3, 0, 9),
        row({ stall_turns: 3 }, 3, 0, 7),
      ],
      base,
    );
    expect(ranked.map((r) => r.thresholds.stall_turns)).toEqual([3, 5, 6, 8]);
  });
  test("distance is relative to the current value", () => {
    expect(distance({ stall_turns: policy.thresholds.stall_turns * 2 }, policy.thresholds)).toBe(1);
    expect(distance({}, policy.thresholds)).toBe(0);
  });
});

describe("grids", () => {
  test("gridOf makes every combination", () => {
    expect(gridOf({ stall_turns: [2, 3], dup_warn: [0.3, 0.4, 0.5] })).toHaveLength(6);
    expect(gridOf(DEFAULT_AXES)).toHaveLength(486);
    // the shipped thresholds are one of the candidates, and every knob that decides the first flag is swept
    const shipped = policy.thresholds;
    for (const [k, values] of Object.entries(DEFAULT_AXES))
      expect(values, k).toContain(shipped[k as keyof typeof shipped]);
    expect(Object.keys(DEFAULT_AXES)).toEqual(expect.arrayContaining(["row_warn", "retrace_warn"]));
    expect(gridOf({})).toEqual([{}]);
  });
  test("parseGrid reads key=values and checks each value against the config schema", () => {
    expect(parseGrid("stall_turns=2,4; dup_warn=0.3,0.4")).toEqual({
      stall_turns: [2, 4],
      dup_warn: [0.3, 0.4],
    });
    expect(() => parseGrid("dup_warn=1.5")).toThrow(/--grid: thresholds\.dup_warn: .*\(value 1\.5\)/);
    expect(() => parseGrid("no_such_knob=1")).toThrow(/thresholds\.no_such_knob: unknown key/);
    expect(() => parseGrid("stall_turns=a")).toThrow(/must be numbers/);
    expect(() => parseGrid("stall_turns")).toThrow(/expected key=v1,v2/);
    expect(() => parseGrid(" ; ")).toThrow(/no axes/);
  });
});
