// The decisions storing a /progress body makes, on values (no database here):
// one judge per session (a watchdog report is not stored while the session's
// plugin reports), what counts as a flag, and which report's verdict a
// session shows when reports arrive out of order.
import type { Verdict } from "../../shared/index.ts";

/** The session's plugin reported within the live window: it is the one judge, the watchdog's word is dropped. */
export function watchdogCovered(
  pluginSeenAt: number | null,
  now: number,
  pluginLiveMs: number | undefined,
): boolean {
  return pluginLiveMs !== undefined && pluginSeenAt !== null && now - pluginSeenAt <= pluginLiveMs;
}

/** A flag: the session left ok (ok -> stalling or looping). */
export function isFlag(previous: Verdict, verdict: Verdict): boolean {
  return previous === "ok" && verdict !== "ok";
}

/**
 * Whether a transition made at `at` sets the session's verdict: an older one
 * arriving late (a retry queue flush) joins the history and the counts only.
 */
export function takesVerdict(storedVerdictAt: number | null, at: number): boolean {
  return storedVerdictAt === null || at >= storedVerdictAt;
}
