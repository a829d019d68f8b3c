// The router's alert when the watchdog is blind while opencode runs: a tick
// that found a source (opencode's database, an opencode server) but could not
// read any (an unreadable file, an unexpected shape, an API error). Sessions
// without a plugin are then unwatched, which is the failure the watchdog
// exists to cover. A tick with no database and no server is not an alarm
// (nothing runs). One trigger per blind spell, one resolve when a tick reads
// sessions again. Which ticks are blind is router-ext/watchdog/readout.ts.
import { blindDetail, type TickFacts, tickBlind } from "../watchdog/readout.ts";
import type { Alert } from "./types.ts";

export interface TickView extends TickFacts {
  at: number;
  servers: number;
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
  const blindWhileRunning = tickBlind(tick);
  const state: BlindState = { raised: blindWhileRunning || (prev.raised && tick.blind), lastAt: tick.at };
  if (blindWhileRunning && !prev.raised) {
    return {
      state,
      alert: {
        dedup_key: BLIND_DEDUP_KEY,
        severity: "warning",
        state: "trigger",
        title: "stallguard: the watchdog is blind",
        summary: `${blindDetail(tick)}; sessions without the plugin are unwatched`,
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
        summary: `the watchdog reads opencode's sessions again (${tick.db === "read" ? "opencode.db" : `${tick.servers} opencode server(s)`})`,
        details: "",
        source: "watchdog",
        at: tick.at,
      },
    };
  }
  return { alert: null, state };
}
