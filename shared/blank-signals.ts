// Signals before anything happened: the shape every tracker writes its
// signals into, one list of the fields in the order they are handed out.
import type { Signals } from "./types.ts";

/** Signals with every field at rest (no calls, an empty window), in the order signals() hands them out. */
export function blankSignals(): Signals {
  return {
    calls: 0,
    landed: 0,
    turns: 0,
    failures: 0,
    callsSinceLanded: 0,
    turnsSinceLanded: 0,
    usdSinceLanded: 0,
    promptTokensSinceLanded: 0,
    usdTotal: 0,
    windowSize: 0,
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
  };
}
