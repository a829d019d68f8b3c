// The one place that opens the database and listens. It wires the pieces:
// config layers, the SQLite store, the app, the notifier, the gate, the admin
// page, retention pruning and (for `serve`) the in-process watchdog loop.

import { createHash } from "node:crypto";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";
import { Hono } from "hono";
import { loadConfigLayers } from "../../shared/config-files.ts";
import type { Config, Directive, Transition } from "../../shared/index.ts";
import { adminRoutes } from "../admin/routes.ts";
import { breakerRoutes } from "../breaker/routes.ts";
import { BreakerService } from "../breaker/service.ts";
import { BreakerStore } from "../breaker/store.ts";
import { VERSION } from "../cli/version.ts";
import { defaultDbPath, openDatabase } from "../db/open.ts";
import { type FreshTransition, Store } from "../db/store.ts";
import { createGateMetrics, gateRoutes } from "../gate/index.ts";
import type { ModeAction } from "../modes/policy.ts";
import { blindAlert, initialBlindState } from "../notify/from-watchdog.ts";
import { alertFromTransition, createNotifier, type Notifier, notifierRoutes } from "../notify/index.ts";
import { createApp } from "./app.ts";
import { ConfigError, flagsLayer, LiveConfig } from "./live-config.ts";
import { checkBindHost, generateToken } from "./security.ts";

/** How often the server looks at the latest watchdog tick for the blind alert. */
const BLIND_CHECK_MS = 2000;

import { EXECUTED_ACTIONS } from "./stage.ts";

export interface StartOptions {
  /** 0 picks a free port. Default: server.port from the config. */
  port?: number;
  host?: string;
  dbPath?: string;
  /** A YAML file used instead of config/config.local.yaml. */
  configPath?: string;
  /** The upstream's OpenAI base URL (ending in /v1) for the gate. */
  upstream?: string;
  env?: NodeJS.ProcessEnv;
  /** Run the watchdog loop in-process when watchdog.enabled and no systemd timer is installed. */
  watchdog?: boolean;
  log?: (line: string) => void;
  /** The package root holding config/; default: found from this module's location. null: no files. */
  root?: string | null;
}

export interface RunningServer {
  url: string;
  port: number;
  adminToken: string;
  dbPath: string;
  close(): Promise<void>;
}

export { ConfigError };

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

function remoteAddress(c: Context): string | null {
  try {
    return getConnInfo(c).remote.address ?? null;
  } catch {
    return null;
  }
}

const changed = (a: Config, b: Config, key: keyof Config) =>
  JSON.stringify(a[key]) !== JSON.stringify(b[key]);

/**
 * Starts the router extension.
 *
 * @example
 * const srv = await startServer({ port: 0, dbPath: "/tmp/x.db" });
 * await fetch(`${srv.url}/health`);
 * await srv.close();
 */
export async function startServer(opts: StartOptions = {}): Promise<RunningServer> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const flags = { port: opts.port, host: opts.host, db: opts.dbPath, upstream: opts.upstream };
  // Validate files and flags before touching the database (which holds the overrides).
  const files = loadConfigLayers({ root: opts.root, configPath: opts.configPath, last: flagsLayer(flags) });
  const base = files.config;
  const host = base.server.host;
  const bind = checkBindHost(host, env);
  if (!bind.ok) throw new Error(bind.message);

  const dbPath = base.server.db ?? defaultDbPath(env);
  const store = new Store(openDatabase(dbPath));
  let live: LiveConfig;
  try {
    live = LiveConfig.create({ fileLayers: files.fileLayers, flags, overrides: store.knobOverrides(), log });
  } catch (err) {
    store.close();
    throw err;
  }
  const cfg = () => live.get();

  const envToken = env.STALLGUARD_ADMIN_TOKEN?.trim();
  const adminToken = envToken || generateToken();
  const pluginToken = env[cfg().plugin.token_env]?.trim() || null;

  const notify = swappableNotifier(createNotifier(cfg().notifications, { env, log }));

  // The behaviour breaker: state and trips in the same database, evaluated on stall verdicts.
  const breakerStore = new BreakerStore(store.db);
  const breaker = new BreakerService({
    store: breakerStore,
    config: () => cfg().breaker,
    notify: (a) => {
      notify.notifier.send(a);
      store.bump("alerts_total");
    },
    log,
  });

  const executeActions = (fresh: FreshTransition[]): Directive[] => {
    const directives: Directive[] = [];
    for (const f of fresh) {
      const t: Transition = f.transition;
      const alert = alertFromTransition(t);
      if (alert) {
        notify.notifier.send(alert);
        store.bump("alerts_total");
      }
      for (const a of f.actions as ModeAction[]) {
        if (a.type === "refuse_tree") {
          store.setRefusal(
            "tree",
            a.rootId,
            "stopped",
            "stallguard",
            Date.now(),
            `max_recoveries (${cfg().progress.max_recoveries}) reached within recover_window`,
          );
          log(`tree ${a.rootId}: hard stop (max_recoveries); waiting for an admin Resume`);
        } else if (a.type === "directive" && t.source === "plugin") {
          directives.push({
            id: `d:${createHash("sha256").update(t.id).digest("base64url").slice(0, 32)}`,
            action: a.directive,
            session_id: a.sessionId,
            root_id: a.rootId,
            report: a.report.slice(0, 4000),
          });
        } else if (!EXECUTED_ACTIONS.has(a.type)) {
          log(
            `mode ${cfg().progress.mode}: action ${a.type} for ${t.session_id} not carried out by this server yet`,
          );
        }
      }
    }
    try {
      breaker.onVerdicts(fresh.map((f) => f.transition.verdict));
    } catch (err) {
      log(`breaker: evaluate failed: ${(err as Error).message}`);
    }
    return directives;
  };

  // The gate: rebuilt when one of its knobs changes; the mounted wrapper forwards
  // to the current instance, and the metrics object outlives rebuilds.
  const gateMetrics = createGateMetrics();
  const buildGate = (c: Config) => {
    const keyEnv = c.server.upstream_api_key_env;
    return gateRoutes({
      upstream: c.server.upstream,
      apiKey: keyEnv ? env[keyEnv]?.trim() || null : null,
      prices: c.prices,
      refusal: c.progress.refusal,
      maxBodyBytes: c.server.max_proxy_bytes,
      timeoutMs: c.server.upstream_timeout,
      store,
      metrics: gateMetrics,
      log,
      modelRoute: (m) => breaker.route(m),
    });
  };
  let gate = buildGate(cfg());
  const gateMount = new Hono();
  gateMount.all("/v1/*", (c) => gate.fetch(c.req.raw));
  gateMount.get("/gate/:conversation", (c) => gate.fetch(c.req.raw));
  if (cfg().server.upstream === null)
    log("gate: no upstream configured (--upstream or server.upstream); /v1/* answers 503");

  const app = createApp({
    store,
    config: live,
    adminToken,
    pluginToken,
    version: VERSION,
    log,
    remoteAddress,
    onFresh: executeActions,
    adminApps: [notifierRoutes(notify.notifier), breakerRoutes(breaker)],
    openApps: [adminRoutes({ log }), gateMount],
    extraMetrics: () => [gateMetrics.render(), breaker.metrics()],
  });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch: app.fetch, port: base.server.port, hostname: host }, () => resolve(s));
    s.once("error", reject);
  }).catch((err: unknown) => {
    store.close();
    void notify.notifier.close(0);
    throw err;
  });
  server.on("error", (err) => log(`server error: ${err.message}`));
  const port = (server.address() as AddressInfo).port;
  const hostPart = host.includes(":") ? `[${host}]` : host;
  const url = `http://${hostPart}:${port}`;

  // Retention: prune at start, then periodically (at most hourly).
  const prune = () => {
    try {
      const now = Date.now();
      const r = {
        ...store.prune(now, cfg().progress.retention),
        ...breakerStore.prune(now - cfg().progress.retention),
      };
      const total = Object.values(r).reduce((a, b) => a + b, 0);
      if (total > 0) log(`retention: pruned ${JSON.stringify(r)}`);
    } catch (err) {
      log(`retention: prune failed: ${(err as Error).message}`);
    }
  };
  prune();
  const pruneEvery = () => Math.max(60_000, Math.min(3_600_000, Math.floor(cfg().progress.retention / 10)));
  let pruneTimer = setInterval(prune, pruneEvery());
  pruneTimer.unref();

  // The watchdog-blind alert: a stored tick that found opencode running but could
  // not read its sessions (router-ext/notify/from-watchdog.ts). Polled from the
  // store, so in-process and systemd-timer ticks are treated alike.
  let blind = initialBlindState();
  const checkBlind = () => {
    try {
      // A tick older than three intervals says nothing about now (a dead watchdog shows as late).
      const r = blindAlert(blind, store.lastWatchdogTick(), {
        now: Date.now(),
        maxAgeMs: 3 * cfg().watchdog.interval,
      });
      blind = r.state;
      if (r.alert) {
        notify.notifier.send(r.alert);
        store.bump("alerts_total");
        log(`watchdog: ${r.alert.title}`);
      }
    } catch (err) {
      log(`watchdog: blind check failed: ${(err as Error).message}`);
    }
  };
  const blindTimer = setInterval(checkBlind, BLIND_CHECK_MS);
  blindTimer.unref();
  breaker.start(10_000);

  // The in-process watchdog (serve only).
  let watchdog: { stop(): Promise<void> } | null = null;
  const startWatchdog = async (firstDelayMs: number) => {
    if (!opts.watchdog || !cfg().watchdog.enabled) return;
    const wd = await import("../watchdog/index.ts");
    if (wd.timerInstalled({ env })) {
      log(`watchdog: systemd timer ${wd.TIMER_UNIT} installed; not ticking in-process`);
      return;
    }
    watchdog = wd.startWatchdogLoop({
      config: cfg(),
      routerUrl: url,
      token: pluginToken,
      statePath: wd.defaultStatePath(env),
      env,
      log,
      firstDelayMs,
      unref: true,
    });
    log(`watchdog: ticking in-process every ${cfg().watchdog.interval / 1000}s`);
  };
  await startWatchdog(5000);

  const unsubscribe = live.subscribe((next, prev) => {
    const gateKnobs = (c: Config) =>
      JSON.stringify([c.prices, c.progress.refusal, c.server.max_proxy_bytes, c.server.upstream_timeout]);
    if (gateKnobs(next) !== gateKnobs(prev)) gate = buildGate(next);
    if (changed(next, prev, "notifications")) {
      const old = notify.swap(createNotifier(next.notifications, { env, log, startupDiagnostics: false }));
      void old.close();
    }
    if (next.progress.retention !== prev.progress.retention) {
      clearInterval(pruneTimer);
      pruneTimer = setInterval(prune, pruneEvery());
      pruneTimer.unref();
    }
    const watched: Array<keyof Config> = [
      "watchdog",
      "thresholds",
      "progress",
      "verification",
      "local_compute",
    ];
    if (opts.watchdog && watched.some((k) => changed(next, prev, k))) {
      const old = watchdog;
      watchdog = null;
      void (old?.stop() ?? Promise.resolve()).then(() => startWatchdog(next.watchdog.interval));
    }
  });

  if (envToken) {
    log(`stallguard ${VERSION} listening on ${url} (admin: ${url}/admin, token from STALLGUARD_ADMIN_TOKEN)`);
  } else {
    log(`stallguard ${VERSION} listening on ${url}`);
    log(`admin token: ${adminToken}`);
    log(`admin page: ${url}/admin#token=${adminToken}`);
  }
  log(`database: ${dbPath}`);

  let closing: Promise<void> | null = null;
  return {
    url,
    port,
    adminToken,
    dbPath,
    close() {
      closing ??= (async () => {
        unsubscribe();
        clearInterval(pruneTimer);
        clearInterval(blindTimer);
        breaker.stop();
        await watchdog?.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          if ("closeAllConnections" in server) server.closeAllConnections();
        });
        await notify.notifier.close(500);
        store.close();
      })();
      return closing;
    },
  };
}
