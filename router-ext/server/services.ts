// The parts the server is made of, before it listens: the notifier (swappable
// by a knob change), the behaviour breaker, the delivery after each stored
// report, the gate and the app that mounts their routes. start.ts builds them
// once and wires them to the listener and the jobs.
import type { Config } from "../../shared/index.ts";
import { adminRoutes } from "../admin/routes.ts";
import { breakerRoutes } from "../breaker/routes.ts";
import { BreakerService } from "../breaker/service.ts";
import type { BreakerStore } from "../breaker/store.ts";
import { VERSION } from "../cli/version.ts";
import { createGateMetrics, gateProxy, gateRoutes } from "../gate/index.ts";
import { createNotifier, type Notifier, notifierRoutes } from "../notify/index.ts";
import type { RouterStore } from "../store/router-store.ts";
import { createApp } from "./app.ts";
import type { Credentials } from "./credentials.ts";
import { createDelivery } from "./deliver.ts";
import type { LiveConfig } from "./live-config.ts";
import { Rejections } from "./rejections.ts";

/** Forwards to the current notifier, so a notifications knob change can swap it without remounting routes. */
function swappableNotifier(initial: Notifier): { notifier: Notifier; swap(next: Notifier): Notifier } {
  let current = initial;
  const notifier: Notifier = {
    send: (a) => current.send(a),
    channels: () => current.channels(),
    setChannel: (n, p) => current.setChannel(n, p),
    test: (n) => current.test(n),
    deliveries: (l) => current.deliveries(l),
    diagnostics: () => current.diagnostics(),
    idle: () => current.idle(),
    close: (g) => current.close(g),
  };
  return {
    notifier,
    swap(next) {
      const prev = current;
      current = next;
      return prev;
    },
  };
}

export interface Parts {
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  now: () => number;
  store: RouterStore;
  /** The breaker's tables, over the store's Sql (the same database). */
  breakerStore: BreakerStore;
  cfg: () => Config;
  credentials: Credentials;
  /** This replica's id when several serve one PostgreSQL database (router-ext/store/replica-id.ts). */
  replica?: string;
}

/**
 * The notifier (swappable by a knob change), the behaviour breaker, the
 * delivery after each stored report, and the gate. The gate's proxy serves /v1
 * in front of the app (gate/mount.ts) and is rebuilt when one of its knobs
 * changes; its metrics and the count of refused requests outlive rebuilds.
 */
export function buildServices(p: Parts) {
  const { env, log, now, store, cfg } = p;
  const { clientKeys, clientKeyHint } = p.credentials;
  const notify = swappableNotifier(createNotifier(cfg().notifications, { env, log }));
  // The behaviour breaker: state and trips in the same database, evaluated on stall verdicts.
  const breakerStore = p.breakerStore;
  const breaker = new BreakerService({
    store: breakerStore,
    config: () => cfg().breaker,
    notify: (a) => {
      notify.notifier.send(a);
      store.bump("alerts_total").catch((err) => log(`alerts_total not counted: ${(err as Error).message}`));
    },
    log,
    now,
  });
  const delivery = createDelivery({
    store,
    send: (a) => notify.notifier.send(a),
    onVerdicts: (v) => void breaker.onVerdicts(v),
    log,
    now,
    watchdogIntervalMs: () => cfg().watchdog.interval,
  });
  const gateMetrics = createGateMetrics();
  const rejections = new Rejections();
  const buildGate = (c: Config) => {
    const keyEnv = c.server.upstream_api_key_env;
    return gateProxy({
      upstream: c.server.upstream,
      apiKey: keyEnv ? env[keyEnv]?.trim() || null : null,
      clientKeys,
      clientKeyHint,
      host: () => cfg().server.host,
      onRejected: (status) => rejections.add("gate", String(status)),
      prices: c.prices,
      refusal: c.progress.refusal,
      maxBodyBytes: c.server.max_proxy_bytes,
      timeoutMs: c.server.upstream_timeout,
      store,
      metrics: gateMetrics,
      log,
      now,
      modelRoute: (m) => breaker.route(m),
    });
  };
  return { notify, breakerStore, breaker, delivery, gateMetrics, rejections, buildGate };
}

export type Services = ReturnType<typeof buildServices>;

/** The app: the core routes, the notifier's and breaker's admin API, the admin page and the gate's lookups. */
export function buildApp(p: Parts, s: Services, live: LiveConfig) {
  const { store, log, now } = p;
  const { adminToken, pluginToken, clientKeys, clientKeyHint } = p.credentials;
  return createApp({
    store,
    config: live,
    adminToken,
    pluginToken,
    clientNames: clientKeys.map((k) => k.name),
    version: VERSION,
    log,
    now,
    afterStored: s.delivery.afterStored,
    adminApps: [notifierRoutes(s.notify.notifier), breakerRoutes(s.breaker)],
    openApps: [
      adminRoutes({ log }),
      gateRoutes({ store, clientKeys, clientKeyHint, metrics: s.gateMetrics }),
    ],
    rejections: s.rejections,
    extraMetrics: () => [s.gateMetrics.render(), s.breaker.metrics()],
    replica: p.replica,
  });
}
