// What the server carries out after a POST /progress committed: the alerts
// the plans raised (router-ext/modes/plan.ts), their log lines, the
// behaviour breaker's look at the new verdicts, and the watchdog-blind check
// on a fresh tick. Nothing here decides; it delivers.
import type { ProgressMessage } from "../../shared/index.ts";
import type { IngestResult, Store } from "../db/store.ts";
import { type BlindState, blindAlert, initialBlindState } from "../notify/from-watchdog.ts";
import type { Alert } from "../notify/index.ts";

export interface Delivery {
  /** After a POST /progress committed. Never throws. */
  afterIngest(result: IngestResult, messages: readonly ProgressMessage[]): void;
  /** Looks at the latest stored watchdog tick (also on a timer, for a tick that is late). Never throws. */
  checkBlind(): void;
}

export interface DeliveryDeps {
  store: Store;
  send: (alert: Alert) => void;
  onVerdicts: (verdicts: ReadonlyArray<"ok" | "stalling" | "looping">) => void;
  log: (line: string) => void;
  now: () => number;
  /** The watchdog's interval: a tick older than three of them says nothing about now. */
  watchdogIntervalMs: () => number;
}

export function createDelivery(d: DeliveryDeps): Delivery {
  const alert = (a: Alert) => {
    d.send(a);
    d.store.bump("alerts_total");
  };
  let blind: BlindState = initialBlindState();
  const checkBlind = () => {
    try {
      const r = blindAlert(blind, d.store.lastWatchdogTick(), {
        now: d.now(),
        maxAgeMs: 3 * d.watchdogIntervalMs(),
      });
      blind = r.state;
      if (r.alert) {
        alert(r.alert);
        d.log(`watchdog: ${r.alert.title}`);
      }
    } catch (err) {
      d.log(`watchdog: blind check failed: ${(err as Error).message}`);
    }
  };
  return {
    checkBlind,
    afterIngest(result, messages) {
      for (const f of result.fresh) {
        for (const a of f.plan.alerts) alert(a);
        for (const line of f.plan.logs) d.log(line);
      }
      if (result.fresh.length > 0) {
        try {
          d.onVerdicts(result.fresh.map((f) => f.transition.verdict));
        } catch (err) {
          d.log(`breaker: evaluate failed: ${(err as Error).message}`);
        }
      }
      if (messages.some((m) => m.type === "watchdog_tick")) checkBlind();
    },
  };
}
