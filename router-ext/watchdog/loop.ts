// The in-process watchdog: the same tick on watchdog.interval, for `stallguard
// serve` when the systemd timer is not installed (and for `stallguard watchdog`
// without --once). Ticks never overlap: the next one is scheduled only after
// the previous one finished, and the lock file guards against other processes.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { runWatchdogTick, type WatchdogTickOptions, type WatchdogTickResult } from "./tick.ts";
import type { TickRunner } from "./tick-thread.ts";

export const TIMER_UNIT = "stallguard-watchdog.timer";

/** Runs `fn` after `ms`; the loop's timer (injected in tests instead of sleeping). */
export type Schedule = (fn: () => void, ms: number) => { cancel(): void };

const realSchedule =
  (unref: boolean): Schedule =>
  (fn, ms) => {
    const t = setTimeout(fn, ms);
    if (unref) t.unref();
    return { cancel: () => clearTimeout(t) };
  };

export interface WatchdogLoopOptions extends WatchdogTickOptions {
  /** Default config.watchdog.interval. */
  intervalMs?: number;
  /** Delay before the first tick (default 0). */
  firstDelayMs?: number;
  onTick?: (r: WatchdogTickResult) => void;
  /** Let the process exit while only the loop is pending (serve keeps itself alive). Default false. */
  unref?: boolean;
  /** Default: setTimeout. */
  schedule?: Schedule;
  /** Runs each tick (replicas: only the one that leads this interval does; router-ext/store/replica-lead.ts). Default: always. */
  lead?: (tick: () => Promise<void>) => Promise<void>;
  /** Runs a tick: serve's loop hands it to the watchdog's thread (tick-thread.ts). Default: runWatchdogTick here. */
  runTick?: TickRunner;
}

export interface WatchdogLoop {
  /** Stops scheduling and waits for a running tick to finish. */
  stop(): Promise<void>;
}

export function startWatchdogLoop(opts: WatchdogLoopOptions): WatchdogLoop {
  const log = opts.log ?? ((line: string) => console.error(line));
  const interval = Math.max(1000, opts.intervalMs ?? opts.config.watchdog.interval);
  const after = opts.schedule ?? realSchedule(opts.unref === true);
  let stopped = false;
  let timer: { cancel(): void } | null = null;
  let running: Promise<void> | null = null;

  const schedule = (ms: number) => {
    if (stopped) return;
    timer = after(run, ms);
  };
  const run = () => {
    timer = null;
    const tick = () => (opts.runTick ?? runWatchdogTick)(opts).then((r) => opts.onTick?.(r));
    running = (opts.lead ? opts.lead(tick) : tick())
      .catch((err: unknown) => log(`watchdog: tick failed: ${(err as Error)?.stack ?? String(err)}`))
      .finally(() => {
        running = null;
        schedule(interval);
      });
  };
  schedule(Math.max(0, opts.firstDelayMs ?? 0));
  return {
    async stop() {
      stopped = true;
      timer?.cancel();
      timer = null;
      if (running) await running;
    },
  };
}

/** `$XDG_CONFIG_HOME/systemd/user`, defaulting to `~/.config/systemd/user`. */
export function userUnitDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.startsWith("/")
    ? env.XDG_CONFIG_HOME
    : join(env.HOME || homedir(), ".config");
  return join(base, "systemd", "user");
}

const ENABLED = new Set([
  "enabled",
  "enabled-runtime",
  "linked",
  "linked-runtime",
  "alias",
  "static",
  "indirect",
]);
const NOT_RUNNING = new Set(["disabled", "masked", "masked-runtime"]);

/**
 * Whether the watchdog timer is installed, so `serve` must not tick in-process
 * too. Asks `systemctl --user is-enabled` when it answers for the unit;
 * otherwise looks for the unit file in the user unit dir.
 */
export function timerInstalled(
  opts: { env?: NodeJS.ProcessEnv; dir?: string; systemctl?: boolean } = {},
): boolean {
  if (opts.systemctl !== false) {
    const r = spawnSync("systemctl", ["--user", "is-enabled", TIMER_UNIT], {
      encoding: "utf8",
      timeout: 3000,
      env: opts.env ?? process.env,
    });
    const answer = r.error ? "" : (r.stdout ?? "").trim().split("\n")[0];
    if (answer && ENABLED.has(answer)) return true;
    if (answer && NOT_RUNNING.has(answer)) return false;
  }
  return existsSync(join(opts.dir ?? userUnitDir(opts.env), TIMER_UNIT));
}
