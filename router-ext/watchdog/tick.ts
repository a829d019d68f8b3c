// One watchdog tick, the shell: take the lock, load the state, read what
// opencode runs (discover.ts: its database, then its servers), judge it
// (replay-trees.ts, pure), ask the local model about flagged changes, report to the
// router, raise the router-down alert, save the state. It reports; it never
// aborts or compacts anything.

import { postProgress } from "../../io/progress-client.ts";
import { readSecretFile, secretFilePaths } from "../../io/secret-files.ts";
import {
  type Config,
  type ProgressMessage,
  parseProgressBody,
  progressResponseSchema,
  type Transition,
  type WatchdogTick,
  watchdogModel,
} from "../../shared/index.ts";
import { opencodeDbPath } from "../opencode-db/path.ts";
import type { DbState } from "./db-source.ts";
import { notifyCritical } from "./desktop.ts";
import { buildDigest } from "./digest.ts";
import { discover } from "./discover.ts";
import { acquireLock } from "./lock.ts";
import { askSecondOpinion, type SecondOpinion } from "./ollama.ts";
import {
  activeSince,
  type BlindReason,
  type ReplayedSession,
  type RouterStatus,
  replayTick,
  settleTick,
} from "./replay-trees.ts";
import { authFor, opencodeAuthHeader, rcServersPath, readRcServers } from "./servers.ts";
import { loadState, saveState } from "./state.ts";

export type { RouterStatus };

export interface WatchdogTickOptions {
  config: Config;
  /** Extra opencode server URLs (the CLI's --server flags). */
  servers?: string[];
  /**
   * watchdog.servers as the config files (and flags) set it, without the admin
   * page's overrides: with the registry's and --server URLs, the only servers
   * sent OPENCODE_SERVER_PASSWORD. Default none.
   */
  fileServers?: readonly string[];
  /** The router extension's base URL, e.g. http://127.0.0.1:4870. */
  routerUrl: string;
  /** Bearer token for POST /progress; default env STALLGUARD_TOKEN (or the plugin.token_env name). */
  token?: string | null;
  statePath: string;
  /** Default: statePath + ".lock". */
  lockPath?: string;
  now?: number | (() => number);
  log?: (line: string) => void;
  fetchImpl?: typeof fetch;
  /** For XDG paths, the token, the opencode password and notify-send's bus address. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Default: $XDG_DATA_HOME/opencode/rc-servers.json. */
  rcServersPath?: string;
  /** opencode's database. Default: watchdog.opencode_db.path, else where opencode keeps it (env). */
  opencodeDbPath?: string | null;
  /** Consecutive ticks with no known server answering before that is logged (default 3). */
  blindAfter?: number;
}

export interface WatchdogTickResult {
  at: number;
  /** Another tick held the lock: this one did nothing. */
  skipped: boolean;
  /** opencode servers that answered. */
  servers: number;
  /** What the tick made of opencode's database (off, missing, read, unreadable, unexpected_shape). */
  db: DbState;
  /** Rows of opencode's database skipped as malformed. */
  malformed: number;
  /** Sessions judged (active ones plus the rest of their trees). */
  sessions: number;
  /** Judged sessions whose verdict is not ok. */
  flagged: number;
  /**
   * No source could be read although one was there: opencode's database could not be opened
   * (db_unreadable), it or a server is in a shape the watchdog does not understand
   * (unexpected_shape), or no answering server listed its sessions (api_error). No database
   * and no server answering is not blind: nothing runs, and the tick is quiet.
   */
  blind: boolean;
  blindReason: BlindReason | null;
  /** Verdict changes found this tick (sent, or attempted when the router was down). */
  transitions: Transition[];
  router: RouterStatus;
  /** The router-down desktop alert was sent on this tick. */
  alerted: boolean;
  /** Second-opinion requests made to the local model. */
  modelCalls: number;
}

const BATCH = 100;

function clockOf(now: WatchdogTickOptions["now"]): () => number {
  if (typeof now === "function") return now;
  if (typeof now === "number") return () => now;
  return Date.now;
}

/** The sessions the router left to their plugin (an answer it cannot parse names none). */
function coveredIn(text: string): string[] {
  try {
    const r = progressResponseSchema.safeParse(JSON.parse(text));
    return r.success ? (r.data.covered ?? []) : [];
  } catch {
    return [];
  }
}

/** Posts in batches; the first batch that fails decides the status. */
async function report(
  url: string,
  messages: ProgressMessage[],
  opts: { token: string | null; timeoutMs: number; fetchImpl: typeof fetch },
): Promise<{ status: RouterStatus; detail: string; covered: string[] }> {
  const covered: string[] = [];
  for (let i = 0; i < messages.length; i += BATCH) {
    const r = await postProgress(url, messages.slice(i, i + BATCH), {
      token: opts.token,
      timeoutMs: opts.timeoutMs,
      fetch: opts.fetchImpl,
    });
    if (r.status === "retry") return { status: "down", detail: r.detail, covered };
    if (r.status !== "sent")
      return { status: r.status, detail: `${r.detail} ${r.text.slice(0, 300)}`, covered };
    covered.push(...coveredIn(r.text));
  }
  return { status: "ok", detail: "", covered };
}

function tokenFrom(opts: WatchdogTickOptions, env: NodeJS.ProcessEnv): string | null {
  if (opts.token !== undefined) return opts.token || null;
  // The environment first, else the plugin.token file serve writes (no copy-paste step).
  return (
    env.STALLGUARD_TOKEN || env[opts.config.plugin.token_env] || readSecretFile(secretFilePaths(env).plugin)
  );
}

/** The local model's opinion on each flagged change; a down or slow model leaves it null. */
async function secondOpinions(
  changed: Array<{ replayed: ReplayedSession; transition: Transition }>,
  opts: WatchdogTickOptions,
  fetchImpl: typeof fetch,
  log: (line: string) => void,
): Promise<number> {
  const { config } = opts;
  if (!config.local_compute.enabled || !config.watchdog.local_llm_enabled) return 0;
  const model = watchdogModel(config);
  let calls = 0;
  for (const { replayed, transition } of changed) {
    if (replayed.verdict === "ok") continue;
    calls++;
    const c = replayed.change;
    const op: SecondOpinion | null = await askSecondOpinion({
      baseUrl: config.verification.base_url,
      model,
      digest: buildDigest({
        agent: c.agent,
        verdict: c.verdict,
        reason: c.reason,
        signals: c.signals,
        calls: replayed.calls,
      }),
      timeoutMs: config.watchdog.timeout,
      fetchImpl,
    });
    if (!op) log(`watchdog: no second opinion from ${model}; the deterministic verdict stands`);
    transition.second_opinion = op;
  }
  return calls;
}

/** The option, else the knob, else where opencode keeps it. */
function dbPathOf(opts: WatchdogTickOptions, env: NodeJS.ProcessEnv): string | null {
  if (opts.opencodeDbPath !== undefined) return opts.opencodeDbPath;
  return opts.config.watchdog.opencode_db.path ?? opencodeDbPath(env);
}

function emptyResult(at: number): WatchdogTickResult {
  return {
    at,
    skipped: false,
    servers: 0,
    db: "off",
    malformed: 0,
    sessions: 0,
    flagged: 0,
    blind: false,
    blindReason: null,
    transitions: [],
    router: "not_sent",
    alerted: false,
    modelCalls: 0,
  };
}

/** What the tick can read: opencode's database, then the servers it is told about. */
function see(opts: WatchdogTickOptions, since: number, env: NodeJS.ProcessEnv, log: (line: string) => void) {
  const wd = opts.config.watchdog;
  const registry = readRcServers(opts.rcServersPath ?? rcServersPath(env), log);
  const flags = opts.servers ?? [];
  return discover({
    dbPath: dbPathOf(opts, env),
    dbOff: !wd.opencode_db.enabled,
    registry,
    configServers: wd.servers,
    flagServers: flags,
    since,
    timeoutMs: wd.timeout,
    fetchImpl: opts.fetchImpl ?? fetch,
    // The password goes only to servers the operator configured (a file, a flag, rc-servers.json).
    auth: authFor(opencodeAuthHeader(env), { registry, configFiles: opts.fileServers ?? [], flags }),
    log,
  });
}

export async function runWatchdogTick(opts: WatchdogTickOptions): Promise<WatchdogTickResult> {
  const env = opts.env ?? process.env;
  const log = opts.log ?? ((line: string) => console.error(line));
  const fetchImpl = opts.fetchImpl ?? fetch;
  const wd = opts.config.watchdog;
  const at = Math.floor(clockOf(opts.now)());
  const result = emptyResult(at);
  const lock = acquireLock(opts.lockPath ?? `${opts.statePath}.lock`, {
    staleMs: Math.max(3 * wd.interval, 10 * 60_000),
    now: at,
    log,
  });
  if (!lock) {
    log("watchdog: another tick is still running, skipped");
    return { ...result, skipped: true };
  }
  try {
    const prev = loadState(opts.statePath, log);
    const seen = await see(opts, activeSince(prev, opts.config, at), env, log);
    const j = replayTick(prev, seen, opts.config, at, { blindAfter: opts.blindAfter });
    for (const line of j.logs) log(line);
    result.modelCalls = await secondOpinions(j.changed, opts, fetchImpl, log);
    const sent = j.changed.filter(({ replayed, transition }) => {
      const check = parseProgressBody(transition);
      if (!check.ok)
        log(`watchdog: dropped an invalid transition for ${replayed.session.id}: ${check.errors[0]}`);
      return check.ok;
    });
    Object.assign(result, {
      servers: j.servers,
      db: seen.db.state,
      malformed: seen.db.malformed,
      sessions: j.sessions,
      flagged: j.flagged,
      blind: j.blind,
      blindReason: j.blindReason,
      transitions: sent.map((c) => c.transition),
    });
    const tick: WatchdogTick = {
      type: "watchdog_tick",
      at,
      servers: j.servers,
      sessions: j.sessions,
      flagged: j.flagged,
      blind: j.blind,
      db: seen.db.state,
    };
    const router = await report(opts.routerUrl, [...result.transitions, tick], {
      token: tokenFrom(opts, env),
      timeoutMs: wd.timeout,
      fetchImpl,
    });
    result.router = router.status;
    const settled = settleTick(j, sent, { ...router, url: opts.routerUrl }, seen);
    for (const line of settled.logs) log(line);
    if (settled.alert) {
      const r = await notifyCritical(settled.alert.summary, settled.alert.body, { env });
      if (r.ok) {
        result.alerted = true;
        settled.state.router_down_alerted = true;
      } else log(`watchdog: desktop alert failed: ${r.detail}`);
    }
    saveState(opts.statePath, settled.state);
    return result;
  } finally {
    lock.release();
  }
}
