// Test fixture: the signals of a quiet session (a full window, nothing
// repeated, nothing failing), for tests that judge or report on values.
import type { Signals } from "./types.ts";

export function quietSignals(over: Partial<Signals> = {}): Signals {
  return {
    calls: 100,
    landed: 0,
    turns: 100,
    failures: 0,
    callsSinceLanded: 0,
    turnsSinceLanded: 0,
    usdSinceLanded: 0,
    promptTokensSinceLanded: 0,
    usdTotal: 0,
    windowSize: 60,
    dupShare: 0,
    ndupShare: 0,
    sameShare: 0,
    repeatShare: 0,
    failStreak: 0,
    failTarget: null,
    contextTokens: 0,
    maxContextTokens: 0,
    busiestTarget: null,
    busiestTargetCount: 0,
    topRepeat: null,
    topSame: null,
    cumRepeat: null,
    cycle: null,
    inARow: null,
    retrace: null,
    mostRepeated: [],
    novelty: 1,
    callsSinceNovel: 0,
    injectedSinceLanded: 0,
    injectedTotal: 0,
    flipFlops: 0,
    compactions: 0,
    lastLandedAt: null,
    readOnly: false,
    ...over,
  };
}
