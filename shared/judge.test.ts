import { describe, expect, it } from "vitest";
import { quietSignals } from "./_test-signals.ts";
import { configSchema } from "./config.ts";
import { judge, sinceLanded } from "./judge.ts";
import type { FlagReason, Signals } from "./types.ts";

const t = configSchema.parse({}).thresholds;

const sig = (over: Partial<Signals> = {}): Signals => quietSignals({ windowSize: t.window, ...over });
const repeat = (count: number) => ({ tool: "read", target: "navbar.js", count });
const stalled = { turnsSinceLanded: t.stall_turns };
const looped = { turnsSinceLanded: t.loop_turns };

describe("worker: both conditions must hold", () => {
  it("repetition without a stall is ok; a stall without repetition is ok (below the ceiling)", () => {
    expect(
      judge(sig({ turnsSinceLanded: t.stall_turns - 1, ndupShare: 0.9, topSame: repeat(50) }), t).verdict,
    ).toBe("ok");
    expect(judge(sig({ turnsSinceLanded: t.ceiling_turns - 1 }), t).verdict).toBe("ok");
  });

  it("turns since landed: below stall_turns ok, at stall_turns stalling", () => {
    const rep = { repeatShare: t.dup_warn };
    expect(judge(sig({ ...rep, turnsSinceLanded: t.stall_turns - 1 }), t)).toEqual({
      verdict: "ok",
      reason: null,
    });
    expect(judge(sig({ ...rep, turnsSinceLanded: t.stall_turns }), t)).toEqual({
      verdict: "stalling",
      reason: "duplicates",
    });
  });

  it("falls back to calls since landed when no turns were observed", () => {
    const rep = { repeatShare: t.dup_warn, turns: 0, turnsSinceLanded: 0 };
    expect(sinceLanded(sig({ turns: 0, callsSinceLanded: 7, turnsSinceLanded: 2 }))).toBe(7);
    expect(sinceLanded(sig({ turns: 3, callsSinceLanded: 7, turnsSinceLanded: 2 }))).toBe(2);
    expect(judge(sig({ ...rep, callsSinceLanded: t.stall_turns - 1 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...rep, callsSinceLanded: t.stall_turns }), t).verdict).toBe("stalling");
  });

  it("dollars since landed: below stall_usd ok, at stall_usd stalling; at loop_usd looping", () => {
    const rep = { failStreak: t.fail_loop };
    expect(judge(sig({ ...rep, usdSinceLanded: t.stall_usd - 0.01 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...rep, usdSinceLanded: t.stall_usd }), t).verdict).toBe("stalling");
    expect(judge(sig({ ...rep, usdSinceLanded: t.loop_usd - 0.01 }), t).verdict).toBe("stalling");
    expect(judge(sig({ ...rep, usdSinceLanded: t.loop_usd }), t).verdict).toBe("looping");
    // a zero dollar knob disables the dollar condition
    expect(
      judge(sig({ ...rep, usdSinceLanded: 100 }), { ...t, stall_usd: 0, loop_usd: 0, ceiling_usd: 0 })
        .verdict,
    ).toBe("ok");
  });

  it("repeat share: below dup_warn ok, at dup_warn stalling; not judged under min_calls", () => {
    expect(judge(sig({ ...stalled, repeatShare: t.dup_warn - 0.001 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, repeatShare: t.dup_warn }), t).reason).toBe("duplicates");
    expect(judge(sig({ ...stalled, repeatShare: 0.99, windowSize: t.min_calls - 1 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, repeatShare: 0.99, windowSize: t.min_calls }), t).verdict).toBe(
      "stalling",
    );
    // the exact and normalized shares are reported, not judged
    expect(judge(sig({ ...stalled, dupShare: 0.9, ndupShare: 0.9, repeatShare: 0 }), t).verdict).toBe("ok");
  });

  it("fail streak: below fail_warn ok, at fail_warn stalling, at fail_loop looping (when looped)", () => {
    expect(judge(sig({ ...stalled, failStreak: t.fail_warn - 1 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, failStreak: t.fail_warn }), t)).toEqual({
      verdict: "stalling",
      reason: "fail_streak",
    });
    expect(judge(sig({ ...looped, failStreak: t.fail_loop - 1 }), t).verdict).toBe("stalling");
    expect(judge(sig({ ...looped, failStreak: t.fail_loop }), t)).toEqual({
      verdict: "looping",
      reason: "fail_streak",
    });
    expect(judge(sig({ ...stalled, failStreak: t.fail_loop }), t).verdict).toBe("stalling");
  });

  it("same call, same result: below top_warn ok, at top_warn stalling, at top_loop looping", () => {
    expect(judge(sig({ ...stalled, topSame: repeat(t.top_warn - 1) }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, topSame: repeat(t.top_warn) }), t)).toEqual({
      verdict: "stalling",
      reason: "repeat_target",
    });
    expect(judge(sig({ ...looped, topSame: repeat(t.top_loop - 1) }), t).verdict).toBe("stalling");
    expect(judge(sig({ ...looped, topSame: repeat(t.top_loop) }), t).verdict).toBe("looping");
    // the same call with a changing result (polling) is not this signal
    expect(judge(sig({ ...looped, topRepeat: repeat(t.top_loop * 2) }), t).verdict).toBe("ok");
  });

  it("a short cycle, same results: below cycle_warn turns ok, at it stalling, at cycle_loop looping", () => {
    const cycle = (reps: number) => ({ period: 2, reps, tool: "grep", target: "src" });
    expect(judge(sig({ ...stalled, cycle: cycle(t.cycle_warn - 1) }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, cycle: cycle(t.cycle_warn) }), t)).toEqual({
      verdict: "stalling",
      reason: "cycle",
    });
    expect(judge(sig({ ...looped, cycle: cycle(t.cycle_loop) }), t).verdict).toBe("looping");
    // not without the stall condition, and never for a read-only agent (its rules are its own)
    expect(judge(sig({ turnsSinceLanded: t.stall_turns - 1, cycle: cycle(50) }), t).verdict).toBe("ok");
    expect(judge(sig({ readOnly: true, cycle: cycle(50) }), t).verdict).toBe("ok");
  });

  /** Below warn ok, at warn stalling, at loop looping; never without the stall condition. */
  function expectLevels(reason: FlagReason, at: (n: number) => Partial<Signals>, warn: number, loop: number) {
    expect(judge(sig({ ...stalled, ...at(warn - 1) }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, ...at(warn) }), t)).toEqual({ verdict: "stalling", reason });
    expect(judge(sig({ ...looped, ...at(loop) }), t)).toEqual({ verdict: "looping", reason });
    expect(judge(sig({ turnsSinceLanded: t.stall_turns - 1, ...at(10 * loop) }), t).verdict).toBe("ok");
  }

  it("in a row, same results: below row_warn repeats ok, at it stalling, at row_loop looping", () => {
    const row = (repeats: number) => ({
      inARow: { period: 2 as const, repeats, tool: "grep", target: "src" },
    });
    expectLevels("in_a_row", row, t.row_warn, t.row_loop);
    // read-only agents: the same call in a row is counted by top_ro_warn
    expect(judge(sig({ readOnly: true, ...row(50) }), t).verdict).toBe("ok");
  });

  it("a retrace: below retrace_warn different calls ok, at it stalling, at retrace_loop looping", () => {
    const retrace = (distinct: number) => ({
      period: 12,
      calls: distinct,
      distinct,
      tool: "read",
      target: "a",
    });
    expectLevels("retrace", (n) => ({ retrace: retrace(n) }), t.retrace_warn, t.retrace_loop);
    // many calls but few different ones (a short alternation seen at a long period) is not enough
    const few = { period: 9, calls: 40, distinct: t.retrace_warn - 1, tool: "read", target: "a" };
    expect(judge(sig({ ...looped, retrace: few }), t).verdict).toBe("ok");
    // read-only agents are only warned, at the workers' looping level, with no stall condition
    expect(judge(sig({ readOnly: true, retrace: retrace(t.retrace_loop - 1) }), t).verdict).toBe("ok");
    expect(judge(sig({ readOnly: true, retrace: retrace(t.retrace_loop) }), t)).toEqual({
      verdict: "stalling",
      reason: "retrace",
    });
    expect(judge(sig({ readOnly: true, retrace: retrace(10 * t.retrace_loop) }), t).verdict).toBe("stalling");
  });

  it("flip-flops: below flip_warn ok, at flip_warn stalling, at flip_loop looping", () => {
    expect(judge(sig({ ...stalled, flipFlops: t.flip_warn - 1 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, flipFlops: t.flip_warn }), t)).toEqual({
      verdict: "stalling",
      reason: "flip_flop",
    });
    expect(judge(sig({ ...looped, flipFlops: t.flip_loop }), t)).toEqual({
      verdict: "looping",
      reason: "flip_flop",
    });
  });

  it("injected continuation turns: below continuation_warn ok, at it stalling", () => {
    expect(judge(sig({ ...stalled, injectedSinceLanded: t.continuation_warn - 1 }), t).verdict).toBe("ok");
    expect(judge(sig({ ...stalled, injectedSinceLanded: t.continuation_warn }), t)).toEqual({
      verdict: "stalling",
      reason: "continuations",
    });
    expect(judge(sig({ turnsSinceLanded: 0, injectedSinceLanded: 50 }), t).verdict).toBe("ok");
  });

  it("the dominant reason follows the order fail streak, flip-flop, repeat, duplicates, continuations", () => {
    const all = {
      ...stalled,
      failStreak: t.fail_warn,
      flipFlops: t.flip_warn,
      topSame: repeat(t.top_warn),
      repeatShare: t.dup_warn,
      injectedSinceLanded: t.continuation_warn,
    };
    expect(judge(sig(all), t).reason).toBe("fail_streak");
    expect(judge(sig({ ...all, failStreak: 0 }), t).reason).toBe("flip_flop");
    expect(judge(sig({ ...all, failStreak: 0, flipFlops: 0 }), t).reason).toBe("repeat_target");
    expect(judge(sig({ ...all, failStreak: 0, flipFlops: 0, topSame: null }), t).reason).toBe("duplicates");
    expect(judge(sig({ ...all, failStreak: 0, flipFlops: 0, topSame: null, repeatShare: 0 }), t).reason).toBe(
      "continuations",
    );
  });

  it("whole-session rule: one exact call cum_warn times since landed stalls, cum_loop loops, no stall needed", () => {
    const cum = (count: number) => sig({ turnsSinceLanded: 0, cumRepeat: repeat(count) });
    expect(judge(cum(t.cum_warn - 1), t).verdict).toBe("ok");
    expect(judge(cum(t.cum_warn), t)).toEqual({ verdict: "stalling", reason: "whole_session" });
    expect(judge(cum(t.cum_loop - 1), t).verdict).toBe("stalling");
    expect(judge(cum(t.cum_loop), t)).toEqual({ verdict: "looping", reason: "whole_session" });
  });

  it("the plain ceiling flags without any repetition, in turns or dollars", () => {
    expect(judge(sig({ turnsSinceLanded: t.ceiling_turns - 1 }), t).verdict).toBe("ok");
    expect(judge(sig({ turnsSinceLanded: t.ceiling_turns }), t)).toEqual({
      verdict: "stalling",
      reason: "ceiling",
    });
    expect(judge(sig({ usdSinceLanded: t.ceiling_usd - 0.01 }), t).verdict).toBe("ok");
    expect(judge(sig({ usdSinceLanded: t.ceiling_usd }), t)).toEqual({
      verdict: "stalling",
      reason: "ceiling",
    });
  });
});

describe("read-only agents: novelty, failures, repeats; never since-landed", () => {
  const ro = (over: Partial<Signals>) => sig({ readOnly: true, ...over });

  it("is not flagged for never landing, however long", () => {
    expect(
      judge(ro({ turnsSinceLanded: 10_000, callsSinceLanded: 10_000, usdSinceLanded: 500 }), t).verdict,
    ).toBe("ok");
  });

  it("repeats: below top_ro_warn ok, at it stalling, at top_ro_loop looping, with no stall condition", () => {
    expect(judge(ro({ topSame: repeat(t.top_ro_warn - 1) }), t).verdict).toBe("ok");
    expect(judge(ro({ topSame: repeat(t.top_ro_warn) }), t)).toEqual({
      verdict: "stalling",
      reason: "read_only_repeat",
    });
    expect(judge(ro({ topSame: repeat(t.top_ro_loop - 1) }), t).verdict).toBe("stalling");
    expect(judge(ro({ topSame: repeat(t.top_ro_loop) }), t)).toEqual({
      verdict: "looping",
      reason: "read_only_repeat",
    });
  });

  it("failures on one target: below fail_warn ok, at it stalling, at fail_loop looping", () => {
    expect(judge(ro({ failStreak: t.fail_warn - 1 }), t).verdict).toBe("ok");
    expect(judge(ro({ failStreak: t.fail_warn }), t)).toEqual({
      verdict: "stalling",
      reason: "read_only_failures",
    });
    expect(judge(ro({ failStreak: t.fail_loop }), t)).toEqual({
      verdict: "looping",
      reason: "read_only_failures",
    });
  });

  it("novelty over a full window: at novelty_ro_warn ok, below it stalling; not judged on a partial window", () => {
    expect(judge(ro({ novelty: t.novelty_ro_warn }), t).verdict).toBe("ok");
    expect(judge(ro({ novelty: t.novelty_ro_warn - 0.01 }), t)).toEqual({
      verdict: "stalling",
      reason: "read_only_novelty",
    });
    expect(judge(ro({ novelty: 0, windowSize: t.window - 1 }), t).verdict).toBe("ok");
  });

  it("calls since anything new: below the ceiling ok, at it stalling", () => {
    expect(judge(ro({ callsSinceNovel: t.ceiling_turns - 1 }), t).verdict).toBe("ok");
    expect(judge(ro({ callsSinceNovel: t.ceiling_turns }), t).reason).toBe("ceiling");
  });

  it("the whole-session rule applies to read-only agents at the window rule's looping level", () => {
    const warn = Math.max(t.cum_warn, t.top_ro_loop);
    const loop = Math.max(t.cum_loop, 2 * t.top_ro_loop);
    expect(judge(ro({ cumRepeat: repeat(warn - 1) }), t).verdict).toBe("ok");
    expect(judge(ro({ cumRepeat: repeat(warn) }), t).reason).toBe("whole_session");
    expect(judge(ro({ cumRepeat: repeat(loop) }), t).verdict).toBe("looping");
  });
});
