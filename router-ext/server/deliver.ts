// What the server carries out after a POST /progress committed: the alerts
// the plans raised (router-ext/modes/plan.ts), their log lines, the
// behaviour breaker's look at the new verdicts, and the watchdog-blind check
// on a fresh tick. Nothing here decides; it delivers.
import type { ProgressMessage } from "../../shared/index.ts";
import type { ProgressResult } from "../db/store-progress.ts";
import { type BlindState, blindAlert, initialBlindState } from "../notify/from-watchdog.ts";
import type { Alert } from "../notify/index.ts";
import { alertClaimKey } from "../store/alert-claims.ts";
import type { RouterStore } from "../store/router-store.ts";

export interface Delivery {
  /** After a POST /progress committed. Never throws. */
  afterStored(result: ProgressResult, messages: readonly ProgressMessage[]): void;
  /** Looks at the latest stored watchdog tick (also on a timer, for a tick that is late). Never rejects. */
  checkBlind(): Promise<void>;
}

export interface DeliveryDeps {
  store: RouterStore;
  send: (alert: Alert) => void;
  onVerdicts: (verdicts: ReadonlyArray<"ok" | "stalling" | "looping">) => void;
  log: (line: string) => void;
  now: () => number;
  /** The watchdog's interval: a tick older than three of them says nothing about now. */
  watchdogIntervalMs: () => number;
}

/**
 * Whether this replica sends `a`: the first to claim its incident key does
 * (router-ext/store/alert-claims.ts; a won claim is counted with it). A claim
 * the store cannot write sends anyway: a duplicate page is better than none,
 * and alerts_total is counted through the write queue (retried).
 */
async function claimed(d: DeliveryDeps, a: Alert): Promise<boolean> {
  try {
    return await d.store.claimAlert(alertClaimKey(a), d.now());
  } catch (err) {
    d.log(`alert claim failed (${(err as Error).message}); sending anyway`);
    d.store.bump("alerts_total").catch((e) => d.log(`alerts_total not counted: ${(e as Error).message}`));
    return true;
  }
}

export function createDelivery(d: DeliveryDeps): Delivery {
  // One claim at a time, so alerts go out in the order they were raised.
  let order: Promise<void> = Promise.resolve();
  const alert = (a: Alert) => {
    order = order.then(async () => {
      if (await claimed(d, a)) d.send(a);
    });
  };
  let blind: BlindState = initialBlindState();
  const checkBlind = async () => {
    try {
      const r = blindAlert(blind, await d.store.lastWatchdogTick(), {
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
    afterStored(result, messages) {
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
      if (messages.some((m) => m.type === "watchdog_tick")) void checkBlind();
    },
  };
}
