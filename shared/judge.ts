// The verdict for one moment of one session, from its signals alone. Both
// conditions have to hold: no landed change for a while AND a repetition
// signal. The plain ceiling and the whole-session rule are separate.
import type { Thresholds } from "./config.ts";
import type { FlagReason, Judgement, Signals } from "./types.ts";

/** What a verdict reads of the signals (a tracker judges on every observation and writes only these). */
export type JudgeInput = Pick<
  Signals,
  | "turns"
  | "turnsSinceLanded"
  | "callsSinceLanded"
  | "usdSinceLanded"
  | "windowSize"
  | "repeatShare"
  | "failStreak"
  | "flipFlops"
  | "topSame"
  | "inARow"
  | "cycle"
  | "retrace"
  | "cumRepeat"
  | "injectedSinceLanded"
  | "novelty"
  | "callsSinceNovel"
  | "readOnly"
>;

interface Level {
  turns: number;
  usd: number;
  dup: number;
  fail: number;
  top: number;
  row: number;
  cycle: number;
  retrace: number;
  flip: number;
}

/** The repetition signal that holds at this level, in order of how telling it is. */
function repetition(s: JudgeInput, t: Thresholds, lvl: Level): FlagReason | null {
  if (s.failStreak >= lvl.fail) return "fail_streak";
  if (s.flipFlops >= lvl.flip) return "flip_flop";
  if (s.topSame && s.topSame.count >= lvl.top) return "repeat_target";
  if (s.inARow && s.inARow.repeats >= lvl.row) return "in_a_row";
  if (s.cycle && s.cycle.reps >= lvl.cycle) return "cycle";
  if (s.retrace && s.retrace.distinct >= lvl.retrace) return "retrace";
  // a share is compared with a little slack: 9/20 computed in floating point is just under 0.45
  if (s.windowSize >= t.min_calls && s.repeatShare >= lvl.dup - 1e-9) return "duplicates";
  if (s.injectedSinceLanded >= t.continuation_warn) return "continuations";
  return null;
}

/** Turns since landed, or calls where no turns were observed (a source without request records). */
export function sinceLanded(s: JudgeInput): number {
  return s.turns > 0 ? s.turnsSinceLanded : s.callsSinceLanded;
}

/** Whether the stretch without a landed change is long or costly enough for this level (not a closure: this runs per observation). */
function stalled(since: number, usd: number, lvl: Level): boolean {
  return since >= lvl.turns || (lvl.usd > 0 && usd >= lvl.usd);
}

/** The verdict of most observations, one object (frozen: it is shared). */
const OK: Judgement = Object.freeze({ verdict: "ok", reason: null });

/** Both levels of a thresholds object, made once: judge() runs per observation (thresholds are replaced, never changed in place). */
const levelCache = new WeakMap<Thresholds, { loop: Level; warn: Level }>();

function levelsOf(t: Thresholds): { loop: Level; warn: Level } {
  let l = levelCache.get(t);
  if (!l) {
    l = {
      loop: {
        turns: t.loop_turns,
        usd: t.loop_usd,
        dup: t.dup_loop,
        fail: t.fail_loop,
        top: t.top_loop,
        row: t.row_loop,
        cycle: t.cycle_loop,
        retrace: t.retrace_loop,
        flip: t.flip_loop,
      },
      warn: {
        turns: t.stall_turns,
        usd: t.stall_usd,
        dup: t.dup_warn,
        fail: t.fail_warn,
        top: t.top_warn,
        row: t.row_warn,
        cycle: t.cycle_warn,
        retrace: t.retrace_warn,
        flip: t.flip_warn,
      },
    };
    levelCache.set(t, l);
  }
  return l;
}

function judgeWorker(s: JudgeInput, t: Thresholds): Judgement {
  const since = sinceLanded(s);
  const usd = s.usdSinceLanded;
  const { loop: loopLvl, warn: warnLvl } = levelsOf(t);
  if (stalled(since, usd, loopLvl)) {
    const why = repetition(s, t, loopLvl);
    if (why) return { verdict: "looping", reason: why };
  }
  if (s.cumRepeat && s.cumRepeat.count >= t.cum_loop) return { verdict: "looping", reason: "whole_session" };
  if (stalled(since, usd, warnLvl)) {
    const why = repetition(s, t, warnLvl);
    if (why) return { verdict: "stalling", reason: why };
  }
  if (s.cumRepeat && s.cumRepeat.count >= t.cum_warn) return { verdict: "stalling", reason: "whole_session" };
  if (since >= t.ceiling_turns || (t.ceiling_usd > 0 && usd >= t.ceiling_usd))
    return { verdict: "stalling", reason: "ceiling" };
  return OK;
}

/**
 * Read-only agents never land by design: judged on repeats, failures and
 * target novelty. Their whole-session count never restarts, so that rule
 * asks for as many repeats as the window rule's looping level.
 */
function judgeReadOnly(s: JudgeInput, t: Thresholds): Judgement {
  const top = s.topSame?.count ?? 0;
  const cum = s.cumRepeat?.count ?? 0;
  if (s.failStreak >= t.fail_loop) return { verdict: "looping", reason: "read_only_failures" };
  if (top >= t.top_ro_loop) return { verdict: "looping", reason: "read_only_repeat" };
  if (cum >= Math.max(t.cum_loop, 2 * t.top_ro_loop)) return { verdict: "looping", reason: "whole_session" };
  if (s.failStreak >= t.fail_warn) return { verdict: "stalling", reason: "read_only_failures" };
  if (top >= t.top_ro_warn) return { verdict: "stalling", reason: "read_only_repeat" };
  // No labelled read-only runs to tune on: a sweep redone only warns, at the workers' looping level.
  // (The same call in a row is counted by top_ro_warn above.)
  if ((s.retrace?.distinct ?? 0) >= t.retrace_loop) return { verdict: "stalling", reason: "retrace" };
  if (cum >= Math.max(t.cum_warn, t.top_ro_loop)) return { verdict: "stalling", reason: "whole_session" };
  if (s.windowSize >= t.window && s.novelty < t.novelty_ro_warn)
    return { verdict: "stalling", reason: "read_only_novelty" };
  if (s.callsSinceNovel >= t.ceiling_turns) return { verdict: "stalling", reason: "ceiling" };
  return OK;
}

export function judge(s: JudgeInput, t: Thresholds): Judgement {
  return s.readOnly ? judgeReadOnly(s, t) : judgeWorker(s, t);
}
