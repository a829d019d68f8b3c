// `stallguard watchdog [--once] [--server URL]... [--router URL] [--config FILE]`
// One tick with --once (what the systemd timer runs); without it the same tick
// runs in the foreground on watchdog.interval until interrupted.
import { resolve } from "node:path";
import { defineCommand } from "citty";
import { routerUrlFor } from "../../io/router-link.ts";
import type { Config } from "../../shared/index.ts";
import { repeated } from "../calibrate/args.ts";
import {
  defaultStatePath,
  runWatchdogTick,
  startWatchdogLoop,
  type WatchdogTickResult,
} from "../watchdog/index.ts";
import { stringArg, switchArg } from "./args.ts";
import { type CliIo, say, warn } from "./io.ts";

/**
 * The same layers `serve` uses: config/config.yaml, then --config FILE or
 * config/config.local.yaml, then the admin overrides stored in the router's
 * database (so a knob changed in the admin page reaches the timer's ticks too).
 * A database that does not exist yet is simply no overrides.
 */
export async function loadWatchdogConfig(
  configPath?: string,
  opts: { env?: NodeJS.ProcessEnv; log?: (line: string) => void; dbPath?: string | null } = {},
): Promise<{ ok: true; config: Config; fileServers: string[] } | { ok: false; error: string }> {
  const { loadRouterConfig } = await import("../config-with-overrides.ts");
  const { ConfigError } = await import("../../shared/index.ts");
  const log = opts.log;
  try {
    const loaded = loadRouterConfig({
      configPath: configPath ? resolve(configPath) : null,
      env: opts.env ?? process.env,
      ...(opts.dbPath !== undefined ? { dbPath: opts.dbPath } : {}),
      ...(log ? { log: (line: string) => log(`watchdog: ${line}`) } : {}),
    });
    // watchdog.servers without the admin page's overrides: the only config URLs sent opencode's password.
    return { ok: true, config: loaded.config, fileServers: loaded.fileConfig.watchdog.servers };
  } catch (err) {
    if (err instanceof ConfigError) return { ok: false, error: err.message };
    return { ok: false, error: `cannot load config: ${(err as Error).message}` };
  }
}

/** Every `--server URL` / `--server=URL` (citty keeps only one value per flag). */
export function serverFlags(rawArgs: readonly string[]): string[] {
  return repeated(rawArgs, "server", undefined);
}

function summary(r: WatchdogTickResult): string {
  if (r.skipped) return "watchdog: skipped (another tick is running)";
  const parts = [
    `servers=${r.servers}`,
    `sessions=${r.sessions}`,
    `flagged=${r.flagged}`,
    `transitions=${r.transitions.length}`,
    `router=${r.router}`,
    `db=${r.db}`,
  ];
  if (r.malformed) parts.push(`malformed=${r.malformed}`);
  if (r.blind) parts.push(`blind=${r.blindReason}`);
  if (r.modelCalls) parts.push(`model_calls=${r.modelCalls}`);
  if (r.alerted) parts.push("alerted=router_down");
  return `watchdog: ${parts.join(" ")}`;
}

export default defineCommand({
  meta: {
    name: "watchdog",
    description:
      "Judge opencode sessions that have no plugin (from opencode.db and any --server), and report to the router",
  },
  args: {
    once: switchArg("Run one tick and exit (what the systemd timer runs)", false),
    server: stringArg("An opencode server URL to watch (repeatable)"),
    router: stringArg(
      "The router extension's URL (default STALLGUARD_URL, plugin.router_url, the router.json serve writes, http://127.0.0.1:4870)",
    ),
    config: stringArg("A config file layered over config/config.yaml"),
  },
  async run({ args, rawArgs, data }): Promise<number> {
    const io = data as CliIo;
    const log = (line: string) => warn(io, line);
    const loaded = await loadWatchdogConfig(args.config, { log, env: io.env });
    if (!loaded.ok) {
      warn(io, `stallguard watchdog: ${loaded.error}`);
      return 2;
    }
    const config = loaded.config;
    const routerUrl = routerUrlFor(config, io.env, args.router).url;
    const opts = {
      config,
      servers: serverFlags(rawArgs),
      fileServers: loaded.fileServers,
      routerUrl,
      statePath: defaultStatePath(io.env),
      env: io.env,
      now: io.now,
      log,
    };
    if (args.once) {
      say(io, summary(await runWatchdogTick(opts)));
      return 0;
    }
    if (!config.watchdog.enabled)
      warn(io, "watchdog: watchdog.enabled is false; running anyway (foreground)");
    const loop = startWatchdogLoop({ ...opts, onTick: (r) => say(io, summary(r)) });
    await io.stopped;
    await loop.stop();
    return 0;
  },
});
