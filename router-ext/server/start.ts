// The one place that opens the database and listens: the composition root.
// It wires the pieces in named steps (config layers, the store on SQLite, the
// notifier, breaker and gate, the app, listen, the background jobs), hands
// knob changes to hot-reload.ts and closes everything in one shutdown.

import type { AddressInfo } from "node:net";
import { hostname } from "node:os";
import { serve } from "@hono/node-server";
import { loadConfigLayers } from "../../io/config-files.ts";
import { announceRouter } from "../../io/router-link.ts";
import type { Config } from "../../shared/index.ts";
import type { BreakerService } from "../breaker/service.ts";
import { BreakerStore } from "../breaker/store.ts";
import { VERSION } from "../cli/version.ts";
import { defaultDbPath } from "../db/open.ts";
import { gateFirstServer } from "../gate/index.ts";
import { createNotifier } from "../notify/index.ts";
import { coalescedReload } from "../store/coalesced-reload.ts";
import { openPgStore, PgStore } from "../store/pg-store.ts";
import { isPgUrl } from "../store/pg-target.ts";
import { replicaId } from "../store/replica-id.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { type Job, startRetention, startWatchdogJob } from "./background.ts";
import { loadCredentials } from "./credentials.ts";
import { hotReload } from "./hot-reload.ts";
import { ConfigError, flagsLayer, LiveConfig } from "./live-config.ts";
import { startAliveMarks } from "./router-alive.ts";
import { checkBindHost } from "./security.ts";
import { buildApp, buildServices, type Parts, type Services } from "./services.ts";

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

/**
 * stallguard's own database; an error names where the path came from and that
 * it is not opencode's (which `calibrate --db` reads). A short busy timeout: a
 * write lock held by another process must not freeze the server (the store
 * queues the gate's writes; /progress answers 503 and the plugin retries).
 */
async function openStore(
  path: string,
  from: "--db" | "server.db" | null,
  d: { now: () => number; log: (line: string) => void },
  env: NodeJS.ProcessEnv,
): Promise<SqliteStore | PgStore> {
  try {
    if (isPgUrl(path))
      return await openPgStore(path, env, {
        now: d.now,
        log: d.log,
        replica: replicaId(env, hostname(), process.pid),
      });
    return await openSqliteStore(path, { busyTimeoutMs: 50, now: d.now, log: d.log, writerThread: true });
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

/** Config files and flags, validated before the database (which holds the overrides) is touched. */
function loadStartConfig(opts: StartOptions, env: NodeJS.ProcessEnv) {
  const flags = { port: opts.port, host: opts.host, db: opts.dbPath, upstream: opts.upstream };
  const files = loadConfigLayers({ root: opts.root, configPath: opts.configPath, last: flagsLayer(flags) });
  const bind = checkBindHost(files.config.server.host, env);
  if (!bind.ok) throw new Error(bind.message);
  return { flags, files, base: files.config };
}

/** The store, and the live config over the files, the flags and the stored knob overrides. */
async function openStoreAndConfig(
  opts: StartOptions,
  loaded: ReturnType<typeof loadStartConfig>,
  d: { env: NodeJS.ProcessEnv; now: () => number; log: (line: string) => void },
) {
  const { base, files, flags } = loaded;
  const dbPath = base.server.db ?? defaultDbPath(d.env);
  const from = opts.dbPath ? "--db" : base.server.db ? "server.db" : null;
  const store = await openStore(dbPath, from, d, d.env);
  try {
    const live = LiveConfig.create({
      fileLayers: files.fileLayers,
      flags,
      overrides: await store.knobOverrides(),
      log: d.log,
    });
    return { store, live, dbPath };
  } catch (err) {
    await store.close();
    throw err;
  }
}

/** Listens with the gate in front of the app; the URL it answers on. */
async function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  at: { port: number; host: string },
  gate: () => ReturnType<Services["buildGate"]>,
  log: (line: string) => void,
) {
  const server = await new Promise<ReturnType<typeof serve>>((resolve, reject) => {
    const s = serve({ fetch, port: at.port, hostname: at.host, createServer: gateFirstServer(gate) }, () =>
      resolve(s),
    );
    s.once("error", reject);
  });
  server.on("error", (err) => log(`server error: ${err.message}`));
  const port = (server.address() as AddressInfo).port;
  const hostPart = at.host.includes(":") ? `[${at.host}]` : at.host;
  return { server, port, url: `http://${hostPart}:${port}` };
}

/** Paths and sources only: a token never goes to the log (the journal under systemd). */
function startupLines(url: string, lines: string[], dbPath: string, base: Config): string[] {
  return [
    `stallguard ${VERSION} listening on ${url}`,
    `admin page: ${url}/admin (it asks for the admin token: the file on the next line, or $STALLGUARD_ADMIN_TOKEN)`,
    ...lines,
    `database: ${dbPath}`,
    upstreamLine(base),
  ];
}

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
  const now = opts.now ?? Date.now;
  const loaded = loadStartConfig(opts, env);
  const { base } = loaded;
  const credentials = loadCredentials(base, env);
  const { store, live, dbPath } = await openStoreAndConfig(opts, loaded, { env, now, log });
  const breakerStore = new BreakerStore(
    store.sql,
    store instanceof PgStore ? store.tellBreakerChanged : undefined,
    store.reads,
  );
  const replica = store instanceof PgStore ? store.replica : undefined;
  const parts: Parts = { env, log, now, store, breakerStore, cfg: () => live.get(), credentials, replica };
  const s = buildServices(parts);
  await s.breaker.reload().catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  let gate = s.buildGate(live.get());
  const app = buildApp(parts, s, live);
  const { server, port, url } = await listen(
    app.fetch,
    { port: base.server.port, host: base.server.host },
    () => gate,
    log,
  ).catch(async (err: unknown) => {
    await store.close();
    void s.notify.notifier.close(0);
    throw err;
  });

  if (store instanceof PgStore) followReplicas(store, live, s.breaker, log);
  const jobs = await startJobs(opts, parts, s, { base, url });
  const unsubscribe = hotReload(live, {
    gate: (next) => {
      gate = s.buildGate(next);
    },
    notifier: (next) => {
      const old = s.notify.swap(createNotifier(next.notifications, { env, log, startupDiagnostics: false }));
      void old.close();
    },
    retention: (next) => jobs.retention.restart(next),
    watchdog: (next) => jobs.watchdog.restart(next),
  });

  for (const line of startupLines(url, credentials.lines, dbPath, base)) log(line);
  announceRouter({
    env,
    host: base.server.host,
    port,
    tokenEnv: base.plugin.token_env,
    version: VERSION,
    startedAt: now(),
    log,
  });

  let closing: Promise<void> | null = null;
  const { adminToken, pluginToken, clientKeys } = credentials;
  return {
    url,
    port,
    adminToken,
    pluginToken,
    clientKeys,
    dbPath,
    close() {
      closing ??= shutdown(unsubscribe, jobs, server, s, store);
      return closing;
    },
  };
}

/**
 * The jobs beside the routes: the router's own heartbeat (an outage before
 * this start becomes an event), retention pruning, the watchdog-blind check
 * on a timer for a tick that goes stale (router-ext/notify/from-watchdog.ts;
 * it also runs on every stored tick), the breaker's clock and the in-process
 * watchdog.
 */
async function startJobs(opts: StartOptions, p: Parts, s: Services, at: { base: Config; url: string }) {
  const { store, now, log, cfg, env } = p;
  const alive = startAliveMarks({ store, now, version: VERSION, log, intervalMs: opts.aliveMs });
  const retention = startRetention({ store, breakerStore: s.breakerStore, config: cfg, now, log });
  const blindTimer = setInterval(s.delivery.checkBlind, opts.blindCheckMs ?? 2000);
  blindTimer.unref();
  s.breaker.start(opts.breakerTickMs ?? 10_000);
  const watchdog = await startWatchdogJob(
    {
      wanted: opts.watchdog === true,
      config: cfg,
      fileServers: at.base.watchdog.servers,
      routerUrl: at.url,
      pluginToken: p.credentials.pluginToken,
      env,
      log,
      ...(store instanceof PgStore ? { lead: (tick, everyMs) => store.leadWatchdogTick(tick, everyMs) } : {}),
    },
    5000,
  );
  const blind: Job = { restart() {}, stop: async () => clearInterval(blindTimer) };
  return { alive, retention, blind, watchdog };
}

/** Stops the config subscription and every job, then the listener, the notifier (500 ms to deliver) and the store. */
async function shutdown(
  unsubscribe: () => void,
  jobs: Awaited<ReturnType<typeof startJobs>>,
  server: ReturnType<typeof serve>,
  s: Services,
  store: SqliteStore | PgStore,
): Promise<void> {
  unsubscribe();
  await jobs.retention.stop();
  await jobs.blind.stop();
  await jobs.alive.stop();
  s.breaker.stop();
  await jobs.watchdog.stop();
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    if ("closeAllConnections" in server) server.closeAllConnections();
  });
  await s.notify.notifier.close(500);
  await store.close();
}

/**
 * Replicas: a knob another replica changed reaches this one's live config
 * (and its listeners), a breaker state another changed (a trip, a close, a
 * Resume) this one's breaker.
 */
function followReplicas(
  store: PgStore,
  live: LiveConfig,
  breaker: BreakerService,
  log: (line: string) => void,
): void {
  const failed = (what: string) => (err: unknown) =>
    log(`${what}: reading another replica's change failed: ${(err as Error).message}`);
  store.onKnobsChanged(() => {
    store.knobOverrides().then((rows) => live.syncOverrides(rows), failed("knobs"));
  });
  // Never two breaker reloads at once: an older read landing last would undo a newer one.
  const breakerReloads = coalescedReload(() => breaker.reload(), log);
  store.onBreakerChanged(() => breakerReloads.signal());
}
