// The server's jobs that run beside its routes, each one started, restarted on
// a knob change (hot-reload.ts) and stopped on close: retention pruning and the
// in-process watchdog loop.
import type { Config } from "../../shared/index.ts";
import type { BreakerStore } from "../breaker/store.ts";
import type { RouterStore } from "../store/router-store.ts";
import type { TickThread } from "../watchdog/tick-thread.ts";

export interface Job {
  restart(next: Config): void;
  stop(): Promise<void>;
}

/** How often retention prunes: a tenth of the retention, from one minute to one hour. */
export const pruneEveryMs = (retentionMs: number) =>
  Math.max(60_000, Math.min(3_600_000, Math.floor(retentionMs / 10)));

/** Prunes at start, then periodically; a failed prune is logged and tried again next time. */
export function startRetention(d: {
  store: RouterStore;
  breakerStore: BreakerStore;
  config: () => Config;
  now: () => number;
  log: (line: string) => void;
}): Job {
  const prune = async () => {
    try {
      const at = d.now();
      const retention = d.config().progress.retention;
      const r = { ...(await d.store.prune(at, retention)), ...(await d.breakerStore.prune(at - retention)) };
      const total = Object.values(r).reduce((a, b) => a + b, 0);
      if (total > 0) d.log(`retention: pruned ${JSON.stringify(r)}`);
    } catch (err) {
      d.log(`retention: prune failed: ${(err as Error).message}`);
    }
  };
  void prune();
  const every = () => {
    const t = setInterval(() => void prune(), pruneEveryMs(d.config().progress.retention));
    t.unref();
    return t;
  };
  let timer = every();
  return {
    restart() {
      clearInterval(timer);
      timer = every();
    },
    async stop() {
      clearInterval(timer);
    },
  };
}

export interface WatchdogJobOptions {
  /** Off unless serve asked for it (opts.watchdog) and watchdog.enabled. */
  wanted: boolean;
  config: () => Config;
  /** watchdog.servers from the files and flags only: an admin-set URL gets no opencode password. */
  fileServers: Config["watchdog"]["servers"];
  routerUrl: string;
  pluginToken: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  /** Replicas: runs a tick only on the replica that leads this interval. */
  lead?: (tick: () => Promise<void>, intervalMs: number) => Promise<void>;
}

/**
 * The in-process watchdog loop (serve only), unless a systemd timer ticks
 * instead. Its ticks run on a thread of their own (watchdog/tick-thread.ts):
 * reading and judging a big tree never holds the gate's event loop.
 */
export async function startWatchdogJob(o: WatchdogJobOptions, firstDelayMs: number): Promise<Job> {
  let loop: { stop(): Promise<void> } | null = null;
  let thread: TickThread | null = null;
  const start = async (delayMs: number) => {
    if (!o.wanted || !o.config().watchdog.enabled) return;
    const wd = await import("../watchdog/index.ts");
    if (wd.timerInstalled({ env: o.env })) {
      o.log(`watchdog: systemd timer ${wd.TIMER_UNIT} installed; not ticking in-process`);
      return;
    }
    thread ??= wd.tickThread(o.log);
    loop = wd.startWatchdogLoop({
      config: o.config(),
      fileServers: o.fileServers,
      routerUrl: o.routerUrl,
      token: o.pluginToken,
      statePath: wd.defaultStatePath(o.env),
      env: o.env,
      log: o.log,
      firstDelayMs: delayMs,
      unref: true,
      runTick: thread.run,
      ...(o.lead
        ? { lead: (tick: () => Promise<void>) => o.lead?.(tick, o.config().watchdog.interval) ?? tick() }
        : {}),
    });
    o.log(`watchdog: ticking in-process every ${o.config().watchdog.interval / 1000}s, on its own thread`);
  };
  await start(firstDelayMs);
  return {
    restart(next) {
      const old = loop;
      loop = null;
      void (old?.stop() ?? Promise.resolve()).then(() => start(next.watchdog.interval));
    },
    async stop() {
      await loop?.stop();
      await thread?.close();
    },
  };
}
