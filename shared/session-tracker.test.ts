import { describe, expect, it } from "vitest";
import { configSchema, type Thresholds } from "./config.ts";
import { type Policy, policyFromConfig } from "./policy.ts";
import { SessionTracker } from "./session-tracker.ts";
import { type RawToolCall, toToolCall } from "./tool-call.ts";
import type { Judgement, ToolCall } from "./types.ts";

const DIR = "/home/dev/repo";
const base = policyFromConfig(configSchema.parse({}));
const t = base.thresholds;
function policyWith(over: Partial<Thresholds> = {}, readOnly?: string[]): Policy {
  return {
    ...base,
    thresholds: { ...base.thresholds, ...over },
    readOnlyAgents: readOnly ? new Set(readOnly) : base.readOnlyAgents,
  };
}

let clock = 0;
function mk(
  tool: string,
  args: unknown,
  metadata: unknown = {},
  status: RawToolCall["status"] = "completed",
  output?: string,
): ToolCall {
  clock += 1000;
  return toToolCall(
    { tool, callId: `c${clock}`, args, metadata, status, ...(output === undefined ? {} : { output }) },
    {
      sessionId: "s",
      parentId: null,
      agent: "build",
      time: clock,
      directory: DIR,
      testPatterns: base.testPatterns,
    },
  );
}
const read = (file: string, offset?: number) =>
  mk("read", { filePath: `${DIR}/${file}`, ...(offset !== undefined ? { offset, limit: 50 } : {}) });
const readMissing = (file: string) => mk("read", { filePath: `${DIR}/${file}` }, {}, "error");
const bash = (command: string, exit: number, output?: string) =>
  mk("bash", { command }, { exit }, "completed", output);
const edit = (file: string, a: string, b: string) =>
  mk(
    "edit",
    { filePath: `${DIR}/${file}`, oldString: a, newString: b },
    { diff: `--- ${file}\n+++ ${file}\n-${a}\n+${b}\n` },
  );

function tracker(policy = policyWith(), agent = "build") {
  return new SessionTracker("s", null, agent, policy);
}
/** Records calls and returns the verdict after each. */
function run(tr: SessionTracker, calls: ToolCall[]): Judgement[] {
  return calls.map((c) => {
    tr.recordCall(c);
    return tr.evaluate();
  });
}
const firstFlag = (js: Judgement[]) => {
  const i = js.findIndex((j) => j.verdict !== "ok");
  return i < 0 ? null : { call: i + 1, ...(js[i] as Judgement) };
};

describe("judging only what changed", () => {
  it("changedSinceJudged: set by every change the verdict reads, cleared when lastVerdict is set", () => {
    const tr = tracker(policyWith({}, ["explore"]));
    const judged = () => {
      tr.lastVerdict = tr.evaluate();
      return tr.changedSinceJudged;
    };
    expect(tr.changedSinceJudged).toBe(true);
    expect(judged()).toBe(false);
    const changes: Array<[string, () => void]> = [
      ["call", () => tr.recordCall(read("a.py"))],
      [
        "turn",
        () => tr.recordTurn({ kind: "turn", sessionId: "s", parentId: null, agent: "build", time: 1 }),
      ],
      ["descendant turn", () => tr.descendantTurn()],
      [
        "usage",
        () =>
          tr.recordUsage({
            kind: "usage",
            sessionId: "s",
            messageId: "m1",
            time: 2,
            costUsd: 1,
            promptTokens: 5,
            contextTokens: 5,
          }),
      ],
      ["descendant usage", () => tr.descendantUsage(1, 5)],
      [
        "user",
        () =>
          tr.recordUser({
            kind: "user",
            sessionId: "s",
            parentId: null,
            agent: "build",
            time: 3,
            injected: true,
            textHash: "h",
          }),
      ],
      ["compaction", () => tr.recordCompaction(4)],
      ["descendant landing", () => tr.descendantLanded(5)],
      [
        "agent",
        () => {
          tr.agent = "explore";
        },
      ],
    ];
    for (const [what, change] of changes) {
      change();
      expect([what, tr.changedSinceJudged]).toEqual([what, true]);
      expect([what, judged()]).toEqual([what, false]);
    }
    // nothing new: a usage counted already, the same agent again
    tr.recordUsage({
      kind: "usage",
      sessionId: "s",
      messageId: "m1",
      time: 6,
      costUsd: 1,
      promptTokens: 5,
      contextTokens: 5,
    });
    tr.agent = "explore";
    expect(tr.changedSinceJudged).toBe(false);
    expect(tr.readOnly).toBe(true);
  });

  it("what is judged (written in one reused object) equals a fresh signals() at every step", () => {
    const tr = tracker();
    const judged = [
      "turns",
      "turnsSinceLanded",
      "callsSinceLanded",
      "usdSinceLanded",
      "windowSize",
      "repeatShare",
      "failStreak",
      "flipFlops",
      "topSame",
      "inARow",
      "cycle",
      "retrace",
      "cumRepeat",
      "injectedSinceLanded",
      "novelty",
      "callsSinceNovel",
      "readOnly",
    ] as const;
    const pick = (s: object) => Object.fromEntries(judged.map((k) => [k, (s as Record<string, unknown>)[k]]));
    for (let i = 0; i < 150; i++) {
      tr.recordCall(i % 7 === 0 ? bash("npm test", i % 2) : read(`f${i % 9}.py`));
      if (i % 5 === 0)
        tr.recordTurn({ kind: "turn", sessionId: "s", parentId: null, agent: "build", time: i });
      expect(pick(tr.signalsToJudge())).toEqual(pick(tr.signals()));
    }
  });
});

describe("signals", () => {
  it("window signals stay current across turns, calls and a descendant's landing (the cache never goes stale)", () => {
    const tr = tracker();
    const turn = (time: number) =>
      tr.recordTurn({ kind: "turn", sessionId: "s", parentId: null, agent: "build", time });
    const fails = Array.from({ length: 3 }, () => readMissing("gone.ts"));
    for (const c of fails) {
      turn(c.time - 1);
      tr.recordCall(c);
    }
    turn(clock + 1);
    const a = tr.signals();
    expect(a).toMatchObject({ failStreak: 3, failTarget: "gone.ts", busiestTargetCount: 3 });
    expect(a.cumRepeat?.count).toBe(3);
    expect(a.mostRepeated).toEqual([{ tool: "read", target: "gone.ts", count: 3 }]);
    // A worker landed: a new stretch, so the window, the streak and the count since landed start over.
    tr.descendantLanded(clock + 2);
    const b = tr.signals();
    expect(b.cumRepeat).toBeNull();
    expect(b.busiestTargetCount).toBe(0);
    expect(b.failStreak).toBe(0);
    tr.recordCall(readMissing("gone.ts"));
    expect(tr.signals()).toMatchObject({ failStreak: 1, busiestTargetCount: 1 });
    // A successful read of the same file ends the failure streak.
    tr.recordCall(read("gone.ts"));
    const c = tr.signals();
    expect(c.failStreak).toBe(0);
    expect(c.busiestTargetCount).toBe(2);
    // Signals are snapshots: changing one returned array does not leak into the next.
    c.mostRepeated.push({ tool: "x", target: "y", count: 9 });
    expect(tr.signals().mostRepeated).toHaveLength(1);
  });

  it("exact and normalized duplicate shares over the window", () => {
    const tr = tracker();
    // 4 distinct slices of one file, then the first slice twice, then a reworded same-slice read
    for (const o of [0, 50, 100, 150, 0, 0]) tr.recordCall(read("big.py", o));
    tr.recordCall(mk("read", { limit: 50, offset: 0, filePath: "big.py" }));
    tr.recordCall(mk("read", { limit: 50, offset: 0, filePath: `${DIR}/big.py` })); // exact dup, other key order
    const s = tr.signals();
    expect(s.windowSize).toBe(8);
    // the relative-path read is a normalized duplicate of slice 0, not an exact one
    expect(s.dupShare).toBeCloseTo(1 - 5 / 8, 10);
    expect(s.ndupShare).toBeCloseTo(1 - 4 / 8, 10);
    tr.recordCall(bash("cat big.py", 0));
    tr.recordCall(bash("cat ./big.py 2>/dev/null", 0));
    const s2 = tr.signals();
    expect(s2.dupShare).toBeCloseTo(1 - 7 / 10, 10);
    expect(s2.ndupShare).toBeCloseTo(1 - 5 / 10, 10);
  });

  it("the window keeps only the last N calls", () => {
    const tr = tracker(policyWith({ window: 10 }));
    for (let i = 0; i < 10; i++) tr.recordCall(read("same.py"));
    expect(tr.signals().ndupShare).toBeCloseTo(0.9, 10);
    for (let i = 0; i < 10; i++) tr.recordCall(read(`f${i}.py`));
    const s = tr.signals();
    expect(s.windowSize).toBe(10);
    expect(s.ndupShare).toBe(0);
    expect(s.calls).toBe(20);
    expect(s.topRepeat).toBeNull();
  });

  it("fail streak counts failures of one fingerprint, is reset by its success, not by other calls", () => {
    const tr = tracker();
    tr.recordCall(bash("pytest tests/t.py", 1));
    tr.recordCall(read("a.py"));
    tr.recordCall(bash("pytest tests/t.py", 1));
    tr.recordCall(bash("ls", 0));
    tr.recordCall(bash("pytest tests/t.py", 2));
    expect(tr.signals().failStreak).toBe(3);
    expect(tr.signals().failTarget).toBe("pytest tests/t.py");
    tr.recordCall(bash("pytest tests/t.py", 0));
    expect(tr.signals().failStreak).toBe(0);
    expect(tr.signals().failTarget).toBeNull();
    expect(tr.signals().failures).toBe(3);
  });

  it("top target counts a target across slices; the judged top repeat does not", () => {
    const tr = tracker();
    for (let i = 0; i < 20; i++) tr.recordCall(read("navbar.js", i * 50));
    const s = tr.signals();
    expect(s.busiestTarget).toBe("navbar.js");
    expect(s.busiestTargetCount).toBe(20);
    expect(s.topRepeat).toBeNull();
    for (let i = 0; i < 3; i++) tr.recordCall(read("navbar.js", 0));
    expect(tr.signals().topRepeat).toEqual({ tool: "read", target: "navbar.js", count: 4 });
  });

  it("turns, dollars and prompt tokens since landed; usage is counted once per message; context is the latest", () => {
    const tr = tracker();
    const turn = (time: number) =>
      tr.recordTurn({ kind: "turn", sessionId: "s", parentId: null, agent: "build", time });
    const usage = (messageId: string, costUsd: number, contextTokens: number) =>
      tr.recordUsage({
        kind: "usage",
        sessionId: "s",
        messageId,
        time: 1,
        costUsd,
        promptTokens: contextTokens,
        contextTokens,
      });
    turn(1);
    expect(usage("m1", 0.5, 120_000)).toBe(true);
    turn(2);
    expect(usage("m2", 0.25, 80_000)).toBe(true);
    expect(usage("m2", 0.25, 80_000)).toBe(false);
    let s = tr.signals();
    expect([s.turns, s.turnsSinceLanded, s.usdSinceLanded, s.promptTokensSinceLanded]).toEqual([
      2, 2, 0.75, 200_000,
    ]);
    expect([s.contextTokens, s.maxContextTokens]).toEqual([80_000, 120_000]);
    tr.recordCall(edit("a.py", "x", "y"));
    s = tr.signals();
    expect([s.turns, s.turnsSinceLanded, s.usdSinceLanded, s.promptTokensSinceLanded, s.usdTotal]).toEqual([
      2, 0, 0, 0, 0.75,
    ]);
    expect(s.contextTokens).toBe(80_000);
  });

  it("injected turns since landed reset on landing; compactions are counted", () => {
    const tr = tracker();
    const user = (injected: boolean) =>
      tr.recordUser({ kind: "user", sessionId: "s", parentId: null, agent: "build", time: 1, injected });
    user(false);
    user(true);
    user(true);
    tr.recordCompaction(2);
    expect([tr.signals().injectedSinceLanded, tr.signals().injectedTotal, tr.signals().compactions]).toEqual([
      2, 2, 1,
    ]);
    tr.recordCall(edit("a.py", "1", "2"));
    expect([tr.signals().injectedSinceLanded, tr.signals().injectedTotal]).toEqual([0, 2]);
  });

  it("novelty: new targets per call in the window, and calls since the last new target", () => {
    const tr = tracker(policyWith({ window: 10 }));
    for (let i = 0; i < 5; i++) tr.recordCall(read(`f${i}.py`));
    expect(tr.signals().novelty).toBe(1);
    for (let i = 0; i < 5; i++) tr.recordCall(read("f0.py"));
    expect(tr.signals().novelty).toBeCloseTo(0.5, 10);
    expect(tr.signals().callsSinceNovel).toBe(5);
    for (let i = 0; i < 10; i++) tr.recordCall(read("f1.py"));
    expect(tr.signals().novelty).toBe(0);
    expect(tr.signals().callsSinceNovel).toBe(15);
  });

  it("most repeated calls over the whole session, for the report", () => {
    const tr = tracker(policyWith({ window: 10 }));
    for (let i = 0; i < 30; i++) tr.recordCall(read("navbar.js"));
    for (let i = 0; i < 12; i++) tr.recordCall(read("tests/t.py"));
    for (let i = 0; i < 3; i++) tr.recordCall(read(`x${i}.py`));
    expect(tr.signals().mostRepeated).toEqual([
      { tool: "read", target: "navbar.js", count: 30 },
      { tool: "read", target: "tests/t.py", count: 12 },
    ]);
  });
});

describe("verdicts from real call streams, at their boundaries", () => {
  it("fail streak: the same failing test flags exactly at fail_warn", () => {
    // the output changes every run (a different failure), so only the streak counts
    const js = run(
      tracker(),
      Array.from({ length: t.fail_warn + 1 }, (_, i) =>
        bash(
          "pytest tests/t.py",
          1,
          `FAILED test_${"abcdefghijklmnop"[i]} expected ${"qrstuvwxyzABCDEF"[i]}`,
        ),
      ),
    );
    expect(firstFlag(js)).toEqual({ call: t.fail_warn, verdict: "stalling", reason: "fail_streak" });
  });

  it("a worker re-reading one file flags at row_warn repeats in a row, or at top_warn reads spread out", () => {
    const js = run(
      tracker(),
      Array.from({ length: 10 }, () => read("navbar.js")),
    );
    expect(firstFlag(js)).toEqual({ call: t.row_warn + 1, verdict: "stalling", reason: "in_a_row" });
    // two new reads between each: nothing in a row, so the count in the window decides
    const spread = run(
      tracker(),
      Array.from({ length: 3 * t.top_warn }, (_, i) => (i % 3 ? read(`other${i}.js`) : read("navbar.js"))),
    );
    expect(firstFlag(spread)).toEqual({
      call: 3 * t.top_warn - 2,
      verdict: "stalling",
      reason: "repeat_target",
    });
  });

  it("sliced reading of one big file is never flagged", () => {
    const js = run(
      tracker(),
      Array.from({ length: 120 }, (_, i) => read("big.py", i * 50)),
    );
    expect(firstFlag(js)).toBeNull();
  });

  it("a read-only agent: flagged at top_ro_warn repeats of one read, not for never landing", () => {
    const p = policyWith();
    const explore = run(
      tracker(p, "explore"),
      Array.from({ length: 200 }, (_, i) => read(`src/file${i}.ts`)),
    );
    expect(firstFlag(explore)).toBeNull();
    const stuck = run(
      tracker(p, "explore"),
      Array.from({ length: 12 }, () => read("router-outcome.js")),
    );
    expect(firstFlag(stuck)).toEqual({
      call: t.top_ro_warn,
      verdict: "stalling",
      reason: "read_only_repeat",
    });
  });

  it("a long read-only exploration of all-new files is never flagged (no inflated whole-session counts)", () => {
    const tr = tracker(policyWith(), "explore");
    const js = run(
      tr,
      Array.from({ length: 1500 }, (_, i) => read(`src/f${i}.ts`)),
    );
    expect(firstFlag(js)).toBeNull();
    expect(tr.signals().cumRepeat).toBeNull();
    expect(tr.signals().mostRepeated).toEqual([]);
  });

  it("a read-only agent reading a deleted file over and over is flagged on failures", () => {
    const js = run(
      tracker(policyWith(), "explore"),
      Array.from({ length: t.fail_warn + 2 }, () => readMissing("gone.js")),
    );
    expect(firstFlag(js)).toEqual({ call: t.fail_warn, verdict: "stalling", reason: "read_only_failures" });
  });

  it("a read-only flag clears after a run of new, successful targets", () => {
    const tr = tracker(policyWith(), "explore");
    const js = run(
      tr,
      Array.from({ length: t.top_ro_warn }, () => read("a.js")),
    );
    expect(js.at(-1)?.verdict).toBe("stalling");
    // the repeats must leave the window before the live verdict is ok again
    const after = run(
      tr,
      Array.from({ length: t.window }, (_, i) => read(`n${i}.js`)),
    );
    expect(after.at(-1)?.verdict).toBe("ok");
  });

  it("the whole-session rule catches a slow loop spread wider than the window", () => {
    // one exact call every 12th call: at most 5 copies in a 60-call window (below top_warn),
    // duplicates well below dup_warn, but 15 copies since anything landed at call 180
    const calls: ToolCall[] = [];
    for (let i = 1; i <= 240; i++)
      calls.push(i % 12 === 0 ? bash("cat .omo/boulder.json", 0) : read(`f${i}.py`));
    const js = run(tracker(), calls);
    expect(firstFlag(js)).toEqual({ call: 12 * t.cum_warn, verdict: "stalling", reason: "whole_session" });
  });

  it("the whole-session count restarts when something lands", () => {
    const calls: ToolCall[] = [];
    for (let i = 1; i <= 240; i++) {
      if (i % 12 === 0) calls.push(bash("cat .omo/boulder.json", 0));
      else if (i % 50 === 0) calls.push(edit("a.py", `v${i}`, `v${i + 1}`));
      else calls.push(read(`f${i}.py`));
    }
    expect(firstFlag(run(tracker(), calls))).toBeNull();
  });

  it("the ceiling flags long healthy-looking work with nothing landed", () => {
    const js = run(
      tracker(),
      Array.from({ length: t.ceiling_turns + 1 }, (_, i) => read(`f${i}.py`)),
    );
    expect(firstFlag(js)).toEqual({ call: t.ceiling_turns, verdict: "stalling", reason: "ceiling" });
  });

  it("a flag sticks while stuck and clears when something lands", () => {
    const tr = tracker();
    run(
      tr,
      Array.from({ length: 8 }, () => read("navbar.js")),
    );
    expect(tr.evaluate().verdict).toBe("stalling");
    tr.recordCall(read("other.js"));
    expect(tr.evaluate().verdict).toBe("stalling");
    tr.recordCall(edit("navbar.js", "a", "b"));
    expect(tr.evaluate()).toEqual({ verdict: "ok", reason: null });
  });

  it("continuation turns that keep arriving with nothing landed are caught", () => {
    const tr = tracker();
    const turn = () =>
      tr.recordTurn({ kind: "turn", sessionId: "s", parentId: null, agent: "build", time: 1 });
    const injected = () =>
      tr.recordUser({
        kind: "user",
        sessionId: "s",
        parentId: null,
        agent: "build",
        time: 1,
        injected: true,
      });
    const verdicts: string[] = [];
    for (let i = 0; i < t.stall_turns + 2; i++) {
      injected();
      turn();
      tr.recordCall(read(`new${i}.py`));
      verdicts.push(tr.evaluate().reason ?? "ok");
    }
    // judged once the stretch is stall_turns long, with continuation_warn injected turns in it
    const at = Math.max(t.stall_turns, t.continuation_warn);
    expect(verdicts.slice(0, at - 1).every((v) => v === "ok")).toBe(true);
    expect(verdicts[at - 1]).toBe("continuations");
  });
});

/** Counts entries of every Map, Set and array reachable from an object (a memory proxy). */
function footprint(root: unknown): number {
  const seen = new Set<unknown>();
  let n = 0;
  const walk = (v: unknown) => {
    if (v === null || typeof v !== "object" || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Map) {
      n += v.size;
      for (const [k, x] of v) {
        walk(k);
        walk(x);
      }
    } else if (v instanceof Set) {
      n += v.size;
      for (const x of v) walk(x);
    } else if (Array.isArray(v)) {
      n += v.length;
      for (const x of v) walk(x);
    } else for (const x of Object.values(v)) walk(x);
  };
  walk(root);
  return n;
}

describe("memory stays bounded however long a session runs", () => {
  function feed(tr: SessionTracker, from: number, to: number) {
    for (let i = from; i < to; i++) {
      const k = i % 7;
      const fp = `fp${i}`;
      // all distinct: the worst case for the novelty set, the top-k and the per-key maps
      const call: ToolCall = {
        sessionId: "s",
        parentId: null,
        agent: "build",
        tool: k === 0 ? "bash" : k === 1 ? "write" : "read",
        callId: `c${i}`,
        fp,
        nfp: `n${i}`,
        target: `t${i}`,
        exit: k === 0 ? i % 2 : null,
        failed: k === 0 && i % 2 === 1,
        effect: k === 0 ? "test" : k === 1 ? "change" : k === 2 && i % 3 === 0 ? "change" : "none",
        change: k === 2 && i % 3 === 0 ? { fwd: `f${i}`, rev: `r${i}` } : null,
        write: k === 1 ? { path: `p${i}`, content: `h${i}`, prior: undefined, existed: null } : null,
        outcome: `o${i}`,
        worktree: k === 0 && i % 5 === 0 ? { before: `w${i}`, after: `w${i + 1}` } : null,
        time: i,
      };
      tr.recordCall(call);
      if (i % 3 === 0) {
        tr.recordTurn({ kind: "turn", sessionId: "s", parentId: null, agent: "build", time: i });
        tr.recordUsage({
          kind: "usage",
          sessionId: "s",
          messageId: `m${i}`,
          time: i,
          costUsd: 0.001,
          promptTokens: 10,
          contextTokens: 10,
        });
        tr.recordUser({
          kind: "user",
          sessionId: "s",
          parentId: null,
          agent: "build",
          time: i,
          injected: i % 2 === 0,
        });
      }
      if (i % 1000 === 0) tr.evaluate();
    }
  }

  it("100k events keep the window, top-k, novelty set and per-key maps at their caps", () => {
    const tr = tracker();
    feed(tr, 0, 20_000);
    const at20k = footprint(tr);
    feed(tr, 20_000, 100_000);
    const at100k = footprint(tr);
    const s = tr.signals();
    expect(s.calls).toBe(100_000);
    // landings every few calls keep the stretch short; the window cap itself is tested above
    expect(s.windowSize).toBeLessThanOrEqual(t.window);
    // bounded: no growth from 20k to 100k events, and far below one entry per event
    expect(at100k).toBeLessThanOrEqual(Math.ceil(at20k * 1.05));
    expect(at100k).toBeLessThan(20_000);
    expect(s.mostRepeated.length).toBeLessThanOrEqual(3);
  });

  it("serialized state (a JSON heuristic) does not grow with repeats of one call either", () => {
    const tr = tracker();
    const size = () =>
      JSON.stringify(tr, (_k, v) => (v instanceof Map ? [...v] : v instanceof Set ? [...v] : v)).length;
    for (let i = 0; i < 5_000; i++) tr.recordCall(read("navbar.js"));
    const a = size();
    for (let i = 0; i < 45_000; i++) tr.recordCall(read("navbar.js"));
    // only the counters' digits may grow
    expect(size() - a).toBeLessThan(200);
  });
});
