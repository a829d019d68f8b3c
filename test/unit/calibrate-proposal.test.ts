// What calibrate proposes from a few labels (router-ext/calibrate/proposal.ts),
// on the recorded corpus (24 sessions through the real opencode binary, in the
// repo): three labels on the shipped thresholds used to propose the earliest
// safe candidate, which flags healthy runs the labels did not include; now the
// current thresholds are kept and the earlier candidate is shown, not
// proposed. A false alarm under twitchy thresholds gets the nearest fix that
// keeps every moved knob two steps from a false flag on the labels.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { MIN_STEPS, marginProblem } from "../../router-ext/calibrate/proposal.ts";
import { renderSweep } from "../../router-ext/calibrate/render.ts";
import { loadExports } from "../../router-ext/calibrate/sources.ts";
import { evaluatePrepared, gridOf, prepare, runSweep } from "../../router-ext/calibrate/sweep.ts";
import { type Label, parseConfig, policyFromConfig } from "../../shared/index.ts";
import { RECORDED, recordedId } from "../helpers/recorded-ids.ts";

const REPO = join(import.meta.dirname, "..", "..");

function policyWith(thresholds: Record<string, number> = {}) {
  const r = parseConfig([
    { source: "config.yaml", text: readFileSync(join(REPO, "config", "config.yaml"), "utf8") },
    { source: "test", value: { thresholds } },
  ]);
  if (!r.ok) throw new Error("config does not parse");
  return policyFromConfig(r.config);
}

const { sessions, labels: all } = loadExports([RECORDED]);

/** A small grid of the default axes' values (the default grid's 240 candidates take seconds here). */
const GRID = gridOf({
  stall_turns: [2, 4, 6],
  dup_warn: [0.25, 0.3, 0.4],
  top_warn: [4, 6, 8],
  fail_warn: [3, 4, 6],
});

function sweepOn(labels: Record<string, Label>, thresholds: Record<string, number> = {}) {
  const policy = policyWith(thresholds);
  const prepared = prepare(sessions, policy);
  return { policy, prepared, sweep: runSweep(prepared, labels, policy, GRID) };
}

describe("the proposal from a few labels", () => {
  test("three labels on the shipped thresholds: the earlier candidate is shown, not proposed", () => {
    const labels: Record<string, Label> = {
      [recordedId("edit-test")]: "healthy",
      [recordedId("read-loop")]: "loop",
      [recordedId("bash-retry-loop")]: "loop",
    };
    const { policy, prepared, sweep } = sweepOn(labels);
    const earliest = sweep.earliest;
    expect(earliest?.healthyFlagged).toBe(0);
    // What --sweep proposed before: safe on the three labels, not on the corpus they came from.
    expect(
      evaluatePrepared(prepared, all, policy, earliest?.thresholds ?? {}).healthyFlagged,
    ).toBeGreaterThan(0);
    expect(sweep.proposal.status).toBe("keep");
    expect(sweep.proposed?.thresholds).toEqual({});
    expect(sweep.proposal.notProposed?.row).toEqual(earliest);
    expect(sweep.proposal.warnings).toEqual([expect.stringMatching(/^only 1 healthy and 2 loop label\(s\)/)]);
    const text = renderSweep(sweep);
    expect(text).toMatch(
      /^proposed: keep the current thresholds \(loops caught 2\/2, healthy flagged 0\/1,/m,
    );
    expect(text).toMatch(/^ {2}not proposed: .*top_warn=\d+/m);
    expect(text).toMatch(/^warning: only 1 healthy and 2 loop label\(s\)/m);
    expect(text).toMatch(
      /^rule: a change is proposed only when the labels show a false alarm or a missed loop/m,
    );
    expect(text).not.toContain("config/config.local.yaml:");
  }, 30_000);

  test("false alarms under twitchy thresholds: the nearest fix, each moved knob two steps from a false flag", () => {
    const falseAlarms = [recordedId("poll-progress"), recordedId("steered")];
    const labels: Record<string, Label> = {
      [falseAlarms[0] as string]: "healthy",
      [falseAlarms[1] as string]: "healthy",
      [recordedId("read-loop")]: "loop",
      [recordedId("bash-retry-loop")]: "loop",
    };
    const twitchy = { top_warn: 3, stall_turns: 2, dup_warn: 0.2, fail_warn: 2 };
    const { sweep } = sweepOn(labels, twitchy);
    expect(sweep.current).toMatchObject({ healthyFlagged: 2, loopsCaught: 2 });
    const p = sweep.proposal;
    expect(p.status).toBe("change");
    expect(p.row).toMatchObject({ healthyFlagged: 0, loopsCaught: 2 });
    expect(p.changes.length).toBeGreaterThan(0);
    for (const c of p.changes) {
      // Nothing asked to flag more: every moved knob flags less, and sits two steps clear.
      expect(c.direction, c.knob).toBe("looser");
      if (c.falseFlag) expect(c.falseFlag.steps, c.knob).toBeGreaterThanOrEqual(MIN_STEPS);
      expect(c.from, c.knob).toBe(twitchy[c.knob as keyof typeof twitchy]);
    }
    expect(p.warnings).toEqual([expect.stringMatching(/^only 2 healthy and 2 loop label\(s\)/)]);
    const text = renderSweep(sweep);
    expect(text).toMatch(/^ {2}top_warn 3 -> \d+ \(looser\): nearest false flag on the labels /m);
    expect(text).toContain(
      `config/config.local.yaml:\nthresholds:\n${p.changes.map((c) => `  ${c.knob}: ${c.to}`).join("\n")}`,
    );
  }, 30_000);

  test("the margin rule: two steps from a false flag, and a knob that flags more must be bounded", () => {
    const change = (over: object) => ({
      knob: "top_warn" as const,
      from: 7,
      to: 6,
      direction: "tighter" as const,
      falseFlag: { value: 4, steps: 2, ids: ["ses_h"] },
      missedLoop: null,
      ...over,
    });
    expect(marginProblem([change({})])).toBeNull();
    expect(marginProblem([change({ falseFlag: { value: 5, steps: 1, ids: ["ses_h"] } })])).toBe(
      "top_warn 6 is 1 step(s) from a false flag at 5 (ses_h)",
    );
    expect(marginProblem([change({ falseFlag: null })])).toMatch(
      /flags more, and no healthy-labelled run bounds it/,
    );
    expect(marginProblem([change({ falseFlag: null, direction: "looser", to: 8 })])).toBeNull();
  });
});
