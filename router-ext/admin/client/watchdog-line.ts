// What the header says about the watchdog, decided from /health and the
// watchdog knobs: off (watchdog.enabled false), no tick yet, late (no tick for
// three intervals), blind (a source was there and none could be read), idle
// (nothing to read: no opencode database, no server; quiet, as the README
// says) or fine. The words for a tick are router-ext/watchdog/readout.ts.
import { type TickFacts, tickBlind, tickReadout } from "../../watchdog/readout.ts";
import type { Health } from "./schemas.ts";

export type WatchdogState = "off" | "none" | "late" | "blind" | "idle" | "ok";

/** Nothing there to read: a legacy tick blind with no server, or no database and no server. */
function idle(t: TickFacts): boolean {
  if (t.db === undefined || t.db === null) return t.blind && !tickBlind(t);
  return t.db !== "read" && (t.servers ?? 0) === 0 && !t.blind;
}

export function watchdogState(
  health: Health,
  intervalMs: number | undefined,
  now: number,
  enabled = true,
): WatchdogState {
  const wd = health.watchdog;
  if (!enabled) return "off";
  if (!wd || !(wd.last_tick_at > 0)) return "none";
  if (intervalMs !== undefined && intervalMs > 0 && now - wd.last_tick_at > 3 * intervalMs) return "late";
  if (tickBlind(wd)) return "blind";
  return idle(wd) ? "idle" : "ok";
}

export const WATCHDOG_NOTE: Record<"off" | "none" | "late", string> = {
  off: "off (watchdog.enabled)",
  none: "no tick recorded",
  late: "LATE: not running?",
};

/** The header's note: the state, or for a recent tick what it read. */
export function watchdogNote(state: WatchdogState, health: Health): string {
  if (state === "off" || state === "none" || state === "late") return WATCHDOG_NOTE[state];
  return health.watchdog ? tickReadout(health.watchdog) : "";
}
