// What a knob change rebuilds while the server runs: the gate (its prices,
// refusal, body cap, upstream timeout), the notifier, the retention timer and
// the in-process watchdog. The decision is pure over the two configs; the
// server's parts carry it out.
import type { Config } from "../../shared/index.ts";
import type { LiveConfig } from "./live-config.ts";

export interface Reload {
  gate: boolean;
  notifier: boolean;
  retention: boolean;
  watchdog: boolean;
}

const changed = (a: Config, b: Config, key: keyof Config) =>
  JSON.stringify(a[key]) !== JSON.stringify(b[key]);

const gateKnobs = (c: Config) =>
  JSON.stringify([c.prices, c.progress.refusal, c.server.max_proxy_bytes, c.server.upstream_timeout]);

/** The config sections the watchdog loop reads. */
const WATCHDOG_SECTIONS: Array<keyof Config> = [
  "watchdog",
  "thresholds",
  "progress",
  "verification",
  "local_compute",
];

/**
 * @example reloadOf(next, prev) // { gate: false, notifier: true, retention: false, watchdog: false }
 */
export function reloadOf(next: Config, prev: Config): Reload {
  return {
    gate: gateKnobs(next) !== gateKnobs(prev),
    notifier: changed(next, prev, "notifications"),
    retention: next.progress.retention !== prev.progress.retention,
    watchdog: WATCHDOG_SECTIONS.some((k) => changed(next, prev, k)),
  };
}

export type Rebuilders = { [K in keyof Reload]: (next: Config) => void };

/** Carries out each config change; returns the unsubscribe. */
export function hotReload(live: LiveConfig, rebuild: Rebuilders): () => void {
  return live.subscribe((next, prev) => {
    const r = reloadOf(next, prev);
    for (const part of ["gate", "notifier", "retention", "watchdog"] as const)
      if (r[part]) rebuild[part](next);
  });
}
