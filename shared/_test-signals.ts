// Test fixture: the signals of a quiet session (a full window, nothing
// repeated, nothing failing), for tests that judge or report on values.
import { blankSignals } from "./blank-signals.ts";
import type { Signals } from "./types.ts";

export function quietSignals(over: Partial<Signals> = {}): Signals {
  return { ...blankSignals(), calls: 100, turns: 100, windowSize: 60, ...over };
}
