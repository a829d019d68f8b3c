// The one place that opens the database and listens. It wires the pieces:
// config layers, the SQLite store, the app, the notifier, the gate, the admin
// page, retention pruning and (for `serve`) the in-process watchdog loop.

import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { loadConfigLayers } from "../../io/config-files.ts";
import type { Config } from "../../shared/index.ts";
import { adminRoutes } from "../admin/routes.ts";
import { breakerRoutes } from "../breaker/routes.ts";
import { BreakerService } from "../breaker/service.ts";
import { BreakerStore } from "../breaker/store.ts";
import { VERSION } from "../cli/version.ts";
import { defaultDbPath, openDatabase } from "../db/open.ts";
import { Store } from "../db/store.ts";
import { createGateMetrics, gateFirstServer, gateProxy, gateRoutes } from "../gate/index.ts";
import { createNotifier, type Notifier, notifierRoutes } from "../notify/index.ts";
import { createApp } from "./app.ts";
import { loadCredentials } from "./credentials.ts";
import { createDelivery } from "./deliver.ts";
import { ConfigError, flagsLayer, LiveConfig } from "./live-config.ts";
import { Rejections } from "./rejections.ts";
import { startAliveMarks } from "./router-alive.ts";
import { announceRouter } from "./router-link.ts";
import { checkBindHost } from "./security.ts";

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
  /** The clock (decisions, pruning, the blind check). Default Date.now. */
  now?: () => number;
  /** How often the server looks at the latest watchdog tick for a late one. Default 2 s. */
  blindCheckMs?: number;
  /** How often the router marks itself alive in its database (the outage on record after a crash). Default 15 s. */
  aliveMs?: number;
  /** How often the breaker moves its models' states forward. Default 10 s. */
  breakerTickMs?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  adminToken: string;
  /** The plugin token POST /progress needs. */
  pluginToken: string;
  /** The gate's client keys (the default one, or those of server.client_keys). */
  clientKeys: Array<{ name: string; key: string }>;
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

/**
 * stallguard's own database; an error names where the path came from and that
 * it is not opencode's (which `calibrate --db` reads). A short busy timeout: a
 * write lock held by another process must not freeze the server (the store
 * queues the gate's writes; /progress answers 503 and the plugin retries).
 */
function openStore(path: string, from: "--db" | "server.db" | null) {
  try {
    return openDatabase(path, { busyTimeoutMs: 50 });
  } catch (err) {
    const what = from ?? "the default database path";
    throw new Error(
      `${what} (stallguard's own store, not opencode's database; that one is calibrate --db): ${(err as Error).message}`,
    );
  }
}

/** Where the gate sends /v1 (its credentials in the URL, if any, left out) and whose key it adds. */
function upstreamLine(c: Config): string {
  const up = c.server.upstream;
  if (up === null) return "gate: no upstream configured (--upstream or server.upstream); /v1/* answers 503";
  const u = new URL(up);
  u.username = "";
  u.password = "";
  const keyEnv = c.server.upstream_api_key_env;
  const key = keyEnv
    ? `the upstream key from $${keyEnv}`
    : "no upstream key (server.upstream_api_key_env unset)";
  return `gate: /v1 -> ${u.toString().replace(/\/+$/, "")} with ${key}`;
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

  const credentials = loadCredentials(base, env);
  const dbPath = base.server.db ?? defaultDbPath(env);
  const now = opts.now ?? Date.now;
  const store = new Store(openStore(dbPath, opts.dbPath ? "--db" : base.server.db ? "server.db" : null), {
    now,
    log,
  });
  let live: LiveConfig;
  try {
    live = LiveConfig.create({ fileLayers: files.fileLayers, flags, overrides: store.knobOverrides(), log });
  } catch (err) {
    store.close();
    throw err;
  }
  const cfg = () => live.get();

  const { adminToken, pluginToken, clientKeys, clientKeyHint } = credentials;

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
    now,
  });
  const delivery = createDelivery({
    store,
    send: (a) => notify.notifier.send(a),
    onVerdicts: (v) => breaker.onVerdicts(v),
    log,
    now,
    watchdogIntervalMs: () => cfg().watchdog.interval,
  });

  // The gate: its proxy serves /v1 in front of the app (gate/mount.ts) and is
  // rebuilt when one of its knobs changes; the metrics object and the count of
  // refused requests outlive rebuilds.
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
  let gate = buildGate(cfg());

  const app = createApp({
    store,
    config: live,
    adminToken,
    pluginToken,
    clientNames: clientKeys.map((k) => k.name),
    version: VERSION,
    log,
    now,
    afterIngest: delivery.afterIngest,
    adminApps: [notifierRoutes(notify.notifier), breakerRoutes(breaker)],
    openApps: [adminRoutes({ log }), gateRoutes({ store, clientKeys, clientKeyHint, metrics: gateMetrics })],
    rejections,
    extraMetrics: () => [gateMetrics.render(), breaker.metrics()],
  });

  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve(
      {
        fetch: app.fetch,
        port: base.server.port,
        hostname: host,
        createServer: gateFirstServer(() => gate),
      },
      () => resolve(s),
    );
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

  // The router's own heartbeat; an outage before this start becomes an event.
  const alive = startAliveMarks({ store, now, version: VERSION, log, intervalMs: opts.aliveMs });

  // Retention: prune at start, then periodically (at most hourly).
  const prune = () => {
    try {
      const at = now();
      const r = {
        ...store.prune(at, cfg().progress.retention),
        ...breakerStore.prune(at - cfg().progress.retention),
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

  // The watchdog-blind alert: checked on every stored tick (delivery.afterIngest),
  // and on a timer for a tick that goes stale (router-ext/notify/from-watchdog.ts).
  const blindTimer = setInterval(delivery.checkBlind, opts.blindCheckMs ?? 2000);
  blindTimer.unref();
  breaker.start(opts.breakerTickMs ?? 10_000);

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
      // watchdog.servers from the files and flags only: an admin-set URL gets no opencode password.
      fileServers: base.watchdog.servers,
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

  // Paths and sources only: a token never goes to the log (the journal under systemd).
  log(`stallguard ${VERSION} listening on ${url}`);
  log(
    `admin page: ${url}/admin (it asks for the admin token: the file on the next line, or $STALLGUARD_ADMIN_TOKEN)`,
  );
  for (const line of credentials.lines) log(line);
  log(`database: ${dbPath}`);
  log(upstreamLine(base));
  announceRouter({
    env,
    host,
    port,
    tokenEnv: base.plugin.token_env,
    version: VERSION,
    startedAt: now(),
    log,
  });

  let closing: Promise<void> | null = null;
  return {
    url,
    port,
    adminToken,
    pluginToken,
    clientKeys,
    dbPath,
    close() {
      closing ??= (async () => {
        unsubscribe();
        clearInterval(pruneTimer);
        clearInterval(blindTimer);
        alive.stop();
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
