// What the header says about the watchdog, decided from /health and the
// watchdog knobs: off (watchdog.enabled false), no tick yet, late (no tick for
// three intervals), blind (opencode answered but its sessions could not be
// read), idle (no opencode server running: quiet, as the README says, not
// blind) or fine.
import type { Health } from "./schemas.ts";

export type WatchdogState = "off" | "none" | "late" | "blind" | "idle" | "ok";

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
  if (!wd.blind) return "ok";
  // Older routers do not say how many servers answered: a blind tick then reads as blind.
  return wd.servers === 0 ? "idle" : "blind";
}

export const WATCHDOG_NOTE: Record<WatchdogState, string> = {
  off: "off (watchdog.enabled)",
  none: "no tick recorded",
  late: "LATE: not running?",
  blind: "BLIND: opencode runs but its sessions could not be read",
  idle: "no opencode running",
  ok: "",
};
