// The watchdog's memory between ticks: when the last tick ran, the verdict it
// last reported per session (so only transitions are reported), and which
// one-shot warnings were already given. Only ids, verdicts and times.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { z } from "zod";

const verdict = z.enum(["ok", "stalling", "looping"]);

export const watchdogStateSchema = z.strictObject({
  version: z.literal(1),
  last_tick_at: z.number().int().min(0).nullable(),
  /** Consecutive ticks on which no opencode server answered. */
  blind_ticks: z.number().int().min(0),
  blind_warned: z.boolean(),
  /** An unexpected opencode API shape was already warned about. */
  shape_warned: z.boolean(),
  /** The router-down desktop alert was already sent (cleared when the router answers again). */
  router_down_alerted: z.boolean(),
  sessions: z.record(
    z.string().min(1).max(200),
    z.strictObject({ verdict, seen_at: z.number().int().min(0) }),
  ),
});
export type WatchdogState = z.infer<typeof watchdogStateSchema>;

export const MAX_STATE_SESSIONS = 5000;

export function emptyState(): WatchdogState {
  return {
    version: 1,
    last_tick_at: null,
    blind_ticks: 0,
    blind_warned: false,
    shape_warned: false,
    router_down_alerted: false,
    sessions: {},
  };
}

/** `$XDG_STATE_HOME/stallguard/watchdog.json`, defaulting to `~/.local/state`. */
export function defaultStatePath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_STATE_HOME?.startsWith("/")
    ? env.XDG_STATE_HOME
    : join(env.HOME || homedir(), ".local", "state");
  return join(base, "stallguard", "watchdog.json");
}

/** Missing -> empty; malformed -> empty, with one log line. Never throws. */
export function loadState(path: string, log?: (line: string) => void): WatchdogState {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return emptyState();
  }
  try {
    const r = watchdogStateSchema.safeParse(JSON.parse(text));
    if (r.success) return r.data;
  } catch {
    // fall through
  }
  log?.(`watchdog: state file ${path} is malformed, starting fresh`);
  return emptyState();
}

/** Keeps the most recently seen sessions, at most `max`. */
export function pruneState(state: WatchdogState, max = MAX_STATE_SESSIONS): WatchdogState {
  const entries = Object.entries(state.sessions);
  if (entries.length <= max) return state;
  entries.sort((a, b) => b[1].seen_at - a[1].seen_at);
  return { ...state, sessions: Object.fromEntries(entries.slice(0, max)) };
}

/** Atomic write: a crash mid-write leaves the previous state, never half a file. */
export function saveState(path: string, state: WatchdogState): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(pruneState(state))}\n`, { mode: 0o600 });
  renameSync(tmp, path);
}
