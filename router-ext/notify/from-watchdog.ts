// The router's alert when the watchdog is blind while opencode runs: a tick
// that found opencode servers (servers > 0) but could not read their sessions
// (an unexpected API shape, an API error). Sessions without a plugin are then
// unwatched, which is the failure the watchdog exists to cover. A tick with no
// server at all is not an alarm (nothing runs). One trigger per blind spell,
// one resolve when a tick reads sessions again.
import type { Alert } from "./types.ts";

export interface TickView {
  at: number;
  servers: number;
  blind: boolean;
}

export interface BlindState {
  /** The alert is raised and not yet resolved. */
  raised: boolean;
  /** The last tick looked at, so a tick is judged once. */
  lastAt: number | null;
}

export const BLIND_DEDUP_KEY = "watchdog:blind";

export function initialBlindState(): BlindState {
  return { raised: false, lastAt: null };
}

/** The alert (if any) the latest tick calls for, and the next state. */
export function blindAlert(
  prev: BlindState,
  tick: TickView | null,
  fresh?: { now: number; maxAgeMs: number },
): { alert: Alert | null; state: BlindState } {
  if (!tick || tick.at === prev.lastAt) return { alert: null, state: prev };
  if (fresh && fresh.now - tick.at > fresh.maxAgeMs) return { alert: null, state: prev };
  const blindWhileRunning = tick.blind && tick.servers > 0;
  const state: BlindState = { raised: blindWhileRunning || (prev.raised && tick.blind), lastAt: tick.at };
  if (blindWhileRunning && !prev.raised) {
    return {
      state,
      alert: {
        dedup_key: BLIND_DEDUP_KEY,
        severity: "warning",
        state: "trigger",
        title: "stallguard: the watchdog is blind",
        summary: `${tick.servers} opencode server(s) answered but their sessions could not be read; sessions without the plugin are unwatched`,
        details: "",
        source: "watchdog",
        at: tick.at,
      },
    };
  }
  if (prev.raised && !tick.blind) {
    return {
      state,
      alert: {
        dedup_key: BLIND_DEDUP_KEY,
        severity: "warning",
        state: "resolve",
        title: "stallguard: the watchdog sees sessions again",
        summary: `the watchdog read sessions from ${tick.servers} opencode server(s) again`,
        details: "",
        source: "watchdog",
        at: tick.at,
      },
    };
  }
  return { alert: null, state };
}
