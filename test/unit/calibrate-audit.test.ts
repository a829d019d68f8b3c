// `calibrate --labels` audit and `--split`, on a small labelled set built from
// the real recorded exports (test/fixtures/recorded). Two labels are flipped
// on purpose, so the set has a false flag and a missed loop to explain; every
// expectation is derived from the replay itself, not typed in.
import { createHash } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { SetAudit } from "../../router-ext/calibrate/audit.ts";
import { loadConfig } from "../../router-ext/calibrate/config.ts";
import { describeFlag, describeMiss, noPeaks } from "../../router-ext/calibrate/explain.ts";
import { parseLabelSet } from "../../router-ext/calibrate/labels.ts";
import type { CalibrateOptions } from "../../router-ext/calibrate/run.ts";
import { halfOf } from "../../router-ext/calibrate/split.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
const NAMES = ["read-loop", "bash-retry-loop", "sliced-read", "edit-test", "sub-agent", "sub-agent-child"];
const idOf = (name: string) =>
  (JSON.parse(readFileSync(join(RECORDED, `${name}.json`), "utf8")) as { info: { id: string } }).info.id;
const thresholds = loadConfig().config.thresholds;

let dir: string;
let labelsPath: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "stallguard-cal-audit-"));
  for (const n of NAMES) copyFileSync(join(RECORDED, `${n}.json`), join(dir, `${n}.json`));
  labelsPath = join(dir, "labels.json");
  writeFileSync(
    labelsPath,
    JSON.stringify({
      [idOf("read-loop")]: { label: "loop", note: "calls 3-16: the same read, nothing edited" },
      // Flipped: a real loop labelled healthy (a false flag to explain), a healthy run labelled loop (a miss).
      [idOf("bash-retry-loop")]: { label: "healthy" },
      [idOf("sliced-read")]: "loop",
      [idOf("edit-test")]: "healthy",
      [idOf("sub-agent")]: "healthy",
      [idOf("sub-agent-child")]: "unclear",
    }),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const run = (opts: CalibrateOptions) => calibrateCaptured(opts);

describe("audit per labelled set", () => {
  test("figures, each false flag with its call and rule values, each missed loop with how close it came", async () => {
    const r = await run({ exports: [dir] });
    expect(r.code, r.err).toBe(0);
    const byId = new Map(r.results.map((x) => [x.id, x]));
    const set = r.audit?.sets[0] as SetAudit;
    expect(r.audit?.sets).toHaveLength(1);
    expect(set.name).toBe(labelsPath);
    expect(set.labelled).toEqual({ loop: 2, healthy: 3, unclear: 1 });

    const loops = [idOf("read-loop"), idOf("sliced-read")].map((id) => byId.get(id));
    const caught = loops.filter((x) => x?.first_flag_call !== null);
    expect(set.all.loops).toBe(2);
    expect(set.all.loopsCaught).toBe(caught.length);
    expect(set.all.maxFirstFlag).toBe(Math.max(...caught.map((x) => x?.first_flag_call as number)));

    // The flipped loop is flagged: reported with the replay's call, the replay's rule and the config's value.
    const bash = byId.get(idOf("bash-retry-loop"));
    expect(bash?.worst).not.toBe("ok");
    expect(set.falseFlags.map((f) => f.id)).toEqual([idOf("bash-retry-loop")]);
    const ff = set.falseFlags[0];
    expect(ff?.call).toBe(bash?.first_flag_call);
    expect(ff?.why.startsWith(`${bash?.reason}: `)).toBe(true);
    const knob = /\(([a-z_]+) ([\d.]+)\)/.exec(ff?.why ?? "");
    expect(knob).not.toBeNull();
    expect(String(thresholds[knob?.[1] as keyof typeof thresholds])).toBe(knob?.[2]);
    expect(set.all.healthyFlagged).toBe(1);

    // The flipped healthy run is a missed loop: its call count and the stall gate it never passed.
    const sliced = byId.get(idOf("sliced-read"));
    expect(sliced?.first_flag_call).toBeNull();
    expect(set.missed).toEqual([expect.objectContaining({ id: idOf("sliced-read"), calls: sliced?.calls })]);
    expect(set.missed[0]?.why).toContain(`(stall_turns ${thresholds.stall_turns})`);

    // The note's "calls 3-16" is the labelled start of the one loop caught.
    const readLoop = byId.get(idOf("read-loop"));
    expect(set.loopStarts).toEqual({
      loops: 1,
      medianStart: 3,
      medianFirstFlag: readLoop?.first_flag_call,
      flaggedBeforeStart: (readLoop?.first_flag_call as number) < 3 ? 1 : 0,
    });
    // Calls from that start to the first flag, beside the first flag; the unlabelled-start loop has none.
    expect(set.all.medianFromStart).toBe((readLoop?.first_flag_call as number) - 3);
    expect(set.all.maxFromStart).toBe(set.all.medianFromStart);

    // The text says the same, in ASCII.
    expect(r.out).toContain(`labelled set ${labelsPath}: 2 loop, 3 healthy, 1 unclear loaded`);
    expect(r.out).toContain(
      `    ${idOf("bash-retry-loop")} at call ${bash?.first_flag_call}, ${bash?.worst}: ${ff?.why}`,
    );
    expect(r.out).toContain(`    ${idOf("sliced-read")}, ${sliced?.calls} calls: `);
    expect(r.out).toMatch(
      /labelled loop start \(notes "calls X-Y"\), 1 caught loop\(s\): median start call 3,/,
    );
    expect(r.out).toMatch(/^[\x20-\x7e\n]*$/);
  });

  test("--json carries the same audit as a structured field", async () => {
    const text = await run({ exports: [dir] });
    const json = await run({ exports: [dir], json: true });
    const doc = JSON.parse(json.out) as { audit: unknown };
    expect(doc.audit).toEqual(JSON.parse(JSON.stringify(text.audit)));
  });

  test("--labels is a set of its own; the sets are then also audited together", async () => {
    const extra = join(dir, "..", `${dir.split("/").pop()}-extra-labels.json`);
    writeFileSync(extra, JSON.stringify({ [idOf("edit-test")]: "healthy", ses_not_loaded: "loop" }));
    try {
      const r = await run({ exports: [dir], labels: extra });
      expect(r.audit?.sets.map((s) => s.name)).toEqual([labelsPath, extra, "all sets together"]);
      const own = r.audit?.sets[1] as SetAudit;
      expect(own.all).toMatchObject({ loops: 0, healthy: 1, healthyFlagged: 0 });
      expect(own.notLoaded).toBe(1);
      expect(r.out).toContain("(1 labelled session(s) not among those loaded)");
    } finally {
      rmSync(extra, { force: true });
    }
  });
});

describe("--split", () => {
  test("half A = even first byte of sha256(id), B = odd; the halves partition the set", async () => {
    for (const n of NAMES) {
      const byte = createHash("sha256").update(idOf(n)).digest()[0] as number;
      expect(halfOf(idOf(n))).toBe(byte % 2 === 0 ? "A" : "B");
    }
    const r = await run({ exports: [dir], split: true });
    const set = r.audit?.sets[0] as SetAudit;
    const { A, B } = set.halves ?? {};
    for (const k of ["loops", "loopsCaught", "healthy", "healthyFlagged"] as const)
      expect((A?.[k] ?? 0) + (B?.[k] ?? 0)).toBe(set.all[k]);
    const labels = parseLabelSet("x", JSON.parse(readFileSync(labelsPath, "utf8"))).labels;
    const healthyInA = Object.keys(labels).filter((id) => labels[id] === "healthy" && halfOf(id) === "A");
    expect(A?.healthy).toBe(healthyInA.length);
    expect(set.falseFlags[0]?.half).toBe(halfOf(idOf("bash-retry-loop")));
    expect(r.out).toContain("split: half A = first byte of sha256(session id) even, half B = odd");
    expect(r.out).toMatch(/\n {2}half A +\d+\/\d+ +\d+\/\d+/);
    expect(r.out).toContain(`${idOf("bash-retry-loop")} [half ${halfOf(idOf("bash-retry-loop"))}] at call`);
  });

  test("--split and --margins need labelled sessions", async () => {
    const bare = mkdtempSync(join(tmpdir(), "stallguard-cal-bare-"));
    try {
      copyFileSync(join(RECORDED, "edit-test.json"), join(bare, "edit-test.json"));
      expect((await run({ exports: [bare], split: true })).code).toBe(2);
      const m = await run({ exports: [bare], margins: true });
      expect(m.code).toBe(2);
      expect(m.err).toMatch(
        /--margins needs at least one session labelled "loop" and one labelled "healthy"/,
      );
    } finally {
      rmSync(bare, { recursive: true, force: true });
    }
  });
});

describe("reasons on values", () => {
  const snap = {
    readOnly: false,
    since: 7,
    sinceUnit: "turns" as const,
    usdSinceLanded: 0,
    failStreak: 0,
    failTarget: null,
    flipFlops: 0,
    topSame: { tool: "read", target: "src/x.py", count: 6 },
    cumRepeat: null,
    cycle: { period: 2, reps: 5, tool: "grep", target: "src/x.py" },
    inARow: { period: 2 as const, repeats: 5, tool: "grep", target: "src/x.py" },
    retrace: { period: 7, calls: 4, distinct: 4, tool: "read", target: "src/y.py" },
    windowSize: 20,
    repeatShare: 0.3,
    injectedSinceLanded: 0,
    novelty: 0.5,
    callsSinceNovel: 0,
  };
  test("a flag names the rule, the repeated call, the threshold and the stall gate", () => {
    expect(
      describeFlag({ call: 12, verdict: "stalling", reason: "repeat_target", signals: snap }, thresholds),
    ).toBe(
      `repeat_target: read src/x.py x6 same result (top_warn ${thresholds.top_warn}), 7 turns since landed (stall_turns ${thresholds.stall_turns})`,
    );
    expect(
      describeFlag({ call: 30, verdict: "looping", reason: "duplicates", signals: snap }, thresholds),
    ).toContain(`repeat share 0.30 of 20 calls (dup_loop ${thresholds.dup_loop})`);
    expect(describeFlag({ call: 14, verdict: "stalling", reason: "cycle", signals: snap }, thresholds)).toBe(
      `cycle: 2 calls going round (one: grep src/x.py) x5 turns (cycle_warn ${thresholds.cycle_warn}), 7 turns since landed (stall_turns ${thresholds.stall_turns})`,
    );
    expect(
      describeFlag({ call: 11, verdict: "stalling", reason: "in_a_row", signals: snap }, thresholds),
    ).toBe(
      `in_a_row: 2 calls in turn (one: grep src/x.py) repeated 5 times in a row (row_warn ${thresholds.row_warn}), 7 turns since landed (stall_turns ${thresholds.stall_turns})`,
    );
    const long = { ...snap, since: thresholds.loop_turns };
    expect(describeFlag({ call: 24, verdict: "looping", reason: "retrace", signals: long }, thresholds)).toBe(
      `retrace: 4 different calls redone in order, period 7 (latest: read src/y.py) (retrace_loop ${thresholds.retrace_loop}), ${thresholds.loop_turns} turns since landed (loop_turns ${thresholds.loop_turns})`,
    );
  });

  test("a miss says whether the stall gate was ever passed", () => {
    const peaks = {
      ...noPeaks(),
      since: 2,
      sinceUnit: "calls" as const,
      cumRepeat: { tool: "bash", target: "make", count: 3 },
    };
    expect(describeMiss(peaks, thresholds)).toBe(
      `never stalled: at most 2 calls since landed (stall_turns ${thresholds.stall_turns}); whole-session repeat bash make x3 (cum_warn ${thresholds.cum_warn})`,
    );
    const stalled = { ...peaks, stalledMoments: 4, failStreak: 3 };
    expect(describeMiss(stalled, thresholds)).toContain(
      `while stalled, peaks: same-result repeat none (top_warn ${thresholds.top_warn}), fail streak 3 (fail_warn ${thresholds.fail_warn})`,
    );
    // how close the repetition shapes came: none, then a sweep redone three calls deep
    expect(describeMiss(stalled, thresholds)).toContain(
      `in a row none (row_warn ${thresholds.row_warn}), cycle none (cycle_warn ${thresholds.cycle_warn}), retrace none (retrace_warn ${thresholds.retrace_warn})`,
    );
    const retrace = { period: 9, calls: 3, distinct: 3, tool: "read", target: "a.py" };
    expect(describeMiss({ ...stalled, retrace }, thresholds)).toContain(
      `retrace 3 different calls redone in order, period 9 (latest: read a.py) (retrace_warn ${thresholds.retrace_warn})`,
    );
  });
});
