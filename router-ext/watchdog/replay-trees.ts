// The watchdog's decisions, pure: replay the trees a tick saw through the shared
// replay loop, compare with the verdicts last reported, and, once the report
// went out (or did not), what to remember and whether to raise the router-down
// alert. Time is passed in; the shell (tick.ts) does every I/O.
import {
  type Config,
  incidentReport,
  incidentSummary,
  policyFromConfig,
  prepareTree,
  runTree,
  slugAgent,
  type Transition,
  toTransition,
  type Verdict,
  type VerdictChange,
  watchdogReadOnlyAgents,
} from "../../shared/index.ts";
import { type DigestCall, digestCall } from "./digest.ts";
import type { Seen, WatchedSession, WatchedTree } from "./discover.ts";
import type { WatchdogState } from "./state.ts";

const SINCE_SLACK_MS = 30_000;
const MAX_LOOKBACK_MS = 7 * 24 * 3600_000;

/** How the router took the tick's report (shared/progress-status.ts classes it; down: no answer or retry). */
export type RouterStatus = "ok" | "down" | "rejected" | "refused" | "not_sent";
/** Why no source could be read: the database (unreadable) or a server's answers (unexpected_shape, api_error). */
export type BlindReason = "db_unreadable" | "unexpected_shape" | "api_error";

/** Sessions updated since this time are active this tick. */
export function activeSince(state: WatchdogState, config: Config, now: number): number {
  const last = state.last_tick_at;
  return last === null
    ? now - config.watchdog.lookback
    : Math.max(last - SINCE_SLACK_MS, now - MAX_LOOKBACK_MS);
}

export interface ReplayedSession {
  session: WatchedSession;
  verdict: Verdict;
  change: Omit<VerdictChange, "previous">;
  /** The session's recent calls, for the local model's digest. */
  calls: DigestCall[];
}

/** Replays one session tree through the shared replay loop (a fresh forest, observations merged by time). */
export function replayTree(tree: WatchedTree, config: Config): ReplayedSession[] {
  const policy = policyFromConfig(config, watchdogReadOnlyAgents(config));
  const prepared = prepareTree(
    tree.map((t) => ({
      id: t.session.id,
      parentId: t.session.parentID ?? null,
      directory: t.session.directory ?? null,
      messages: t.messages,
    })),
    policy,
  );
  const lastChangeAt = new Map<string, number>();
  const calls = new Map<string, DigestCall[]>();
  const forest = runTree(prepared, policy, ({ event, changes }) => {
    if (event) {
      const list = calls.get(event.sessionId) ?? [];
      list.push(digestCall(event));
      if (list.length > 200) list.shift();
      calls.set(event.sessionId, list);
    }
    for (const c of changes) lastChangeAt.set(c.sessionId, c.at);
  });
  const out: ReplayedSession[] = [];
  for (const t of tree) {
    const tracker = forest.get(t.session.id);
    if (!tracker) continue;
    const verdict = tracker.lastVerdict.verdict;
    out.push({
      session: t.session,
      verdict,
      calls: calls.get(t.session.id) ?? [],
      change: {
        sessionId: t.session.id,
        parentId: forest.parentOf(t.session.id),
        rootId: forest.rootOf(t.session.id),
        agent: slugAgent(tracker.agent),
        verdict,
        reason: tracker.lastVerdict.reason,
        signals: tracker.signals(),
        at: Math.floor(lastChangeAt.get(t.session.id) ?? t.session.time.updated),
      },
    });
  }
  return out;
}

export interface TickReplay {
  /** The tick's time. */
  at: number;
  /** The state after judging (warnings given, quiet counters); verdicts are remembered after delivery. */
  state: WatchdogState;
  servers: number;
  /** Sources read: the database and each server that listed its sessions. 0: nothing was replayed. */
  read: number;
  sessions: number;
  flagged: number;
  /** Something was there to read (a database file, a server answering) and none of it could be read. */
  blind: boolean;
  blindReason: BlindReason | null;
  replayed: ReplayedSession[];
  /** Verdict changes since the last report, as transitions (no second opinion yet). */
  changed: Array<{ replayed: ReplayedSession; transition: Transition }>;
  /** Lines for the log. */
  logs: string[];
}

/** What the tick could read, and why not where it could not; pure. */
export function readability(seen: Seen): {
  read: number;
  blind: boolean;
  reason: BlindReason | null;
  problems: string[];
} {
  const { db, shapeErrors } = seen;
  const dbRead = db.state === "read" ? 1 : 0;
  const dbBroken = db.state === "unreadable" || db.state === "unexpected_shape";
  // A server that answers the probe but lists nothing (or only trees it cannot read) is not read.
  const serversBlind =
    seen.servers > 0 &&
    (seen.listed === 0 || (shapeErrors.length > 0 && seen.serverTrees === 0 && seen.treeFailures > 0));
  const read = dbRead + (serversBlind ? 0 : seen.listed);
  const problems = [
    ...(dbBroken ? [db.detail ?? `${db.path}: ${db.state}`] : []),
    ...(shapeErrors.length > 0 ? shapeErrors : serversBlind ? seen.apiErrors : []),
  ];
  if (serversBlind && problems.length === 0) problems.push("no session list");
  const blind = read === 0 && (dbBroken || seen.servers > 0);
  if (!blind) return { read, blind, reason: null, problems };
  const reason: BlindReason =
    db.state === "unreadable"
      ? "db_unreadable"
      : db.state === "unexpected_shape" || shapeErrors.length > 0
        ? "unexpected_shape"
        : "api_error";
  return { read, blind, reason, problems };
}

/** The once-per-spell log lines: a source that cannot be read, servers that stopped answering. */
function warnings(state: WatchdogState, seen: Seen, r: ReturnType<typeof readability>, blindAfter: number) {
  const logs: string[] = [];
  // Known servers that do not answer: said once after blindAfter ticks (the database may cover them).
  if (seen.known > 0 && seen.servers === 0) {
    state.blind_ticks++;
    if (state.blind_ticks >= blindAfter && !state.blind_warned) {
      logs.push(
        `watchdog: warning: no opencode server answered for ${state.blind_ticks} ticks (${seen.known} known)${
          seen.db.state === "read" ? "; opencode.db is read" : ""
        }`,
      );
      state.blind_warned = true;
    }
  } else {
    state.blind_ticks = 0;
    state.blind_warned = false;
  }
  // A source in a shape we do not understand or that fails: said once, never a silent "all healthy".
  if (r.problems.length > 0 && !state.shape_warned) {
    const more = r.problems.length > 1 ? ` (+${r.problems.length - 1} more)` : "";
    logs.push(`watchdog: warning: ${r.blind ? "the watchdog is blind: " : ""}${r.problems[0]}${more}`);
    state.shape_warned = true;
  }
  if (r.problems.length === 0) state.shape_warned = false;
  if (seen.db.malformed > 0)
    logs.push(`watchdog: skipped ${seen.db.malformed} malformed row(s) in ${seen.db.path}`);
  return logs;
}

/** One tick's verdicts from what it saw. */
export function replayTick(
  prev: WatchdogState,
  seen: Seen,
  config: Config,
  now: number,
  opts: { blindAfter?: number } = {},
): TickReplay {
  const state: WatchdogState = { ...prev, sessions: { ...prev.sessions } };
  const r = readability(seen);
  const out: TickReplay = {
    at: now,
    state,
    servers: seen.servers,
    read: r.read,
    sessions: 0,
    flagged: 0,
    blind: r.blind,
    blindReason: r.reason,
    replayed: [],
    changed: [],
    logs: warnings(state, seen, r, opts.blindAfter ?? 3),
  };
  // A session reached from two roots (a parent lookup failed on one path) is judged once.
  const ids = new Set<string>();
  out.replayed = seen.trees
    .flatMap((t) => replayTree(t, config))
    .filter((j) => !ids.has(j.session.id) && ids.add(j.session.id));
  out.sessions = out.replayed.length;
  out.flagged = out.replayed.filter((j) => j.verdict !== "ok").length;
  for (const j of out.replayed) {
    const previous: Verdict = state.sessions[j.session.id]?.verdict ?? "ok";
    if (previous === j.verdict) continue;
    const change: VerdictChange = { ...j.change, previous };
    const report = incidentReport(change);
    out.changed.push({
      replayed: j,
      transition: toTransition(change, { source: "watchdog", report, pluginVersion: null }),
    });
  }
  return out;
}

export interface TickSettlement {
  state: WatchdogState;
  logs: string[];
  /** The router-down desktop alert to raise now, or null. */
  alert: { summary: string; body: string } | null;
}

/**
 * After the report: verdicts are remembered only once delivered, so an
 * undelivered change is reported again; the tick time moves on only then.
 * `sent` are the changes that went into the report.
 */
export function settleTick(
  j: TickReplay,
  sent: ReadonlyArray<{ replayed: ReplayedSession }>,
  router: { status: RouterStatus; detail: string; url: string; covered?: readonly string[] },
  seen: Pick<Seen, "truncated">,
): TickSettlement {
  const now = j.at;
  const state: WatchdogState = { ...j.state, sessions: { ...j.state.sessions } };
  const logs: string[] = [];
  // Nothing read: last_tick_at stays, so changes not yet delivered are listed again once opencode is back.
  if (j.read === 0 && !j.blind) return { state, logs, alert: null };
  const { status, detail } = router;
  const delivered = status === "ok" || status === "rejected";
  if (status === "rejected") logs.push(`watchdog: the router rejected the report: ${detail}`);
  if (status === "refused")
    logs.push(`watchdog: the router refused the report (${detail}); check STALLGUARD_TOKEN`);
  if (status === "ok") state.router_down_alerted = false;
  let alert: TickSettlement["alert"] = null;
  if (status === "down") {
    logs.push(`watchdog: the router at ${router.url} is down (${detail})`);
    if (!state.router_down_alerted) {
      const top =
        j.replayed.find((x) => x.verdict === "looping") ?? j.replayed.find((x) => x.verdict !== "ok");
      alert = {
        summary: "stallguard: router is down",
        body: [
          `The stallguard router at ${router.url} is not answering, so nothing is being judged or alerted.`,
          `${j.flagged} session(s) flagged now.`,
          top ? incidentSummary(top.change) : "",
        ]
          .filter(Boolean)
          .join(" "),
      };
    }
  }
  // Not stored by the router (undelivered, or left to the session's plugin): found again next tick.
  const covered = new Set(router.covered ?? []);
  const pending = new Set(
    delivered
      ? sent.filter((c) => covered.has(c.replayed.session.id)).map((c) => c.replayed)
      : sent.map((c) => c.replayed),
  );
  for (const x of j.replayed) {
    const prev = state.sessions[x.session.id];
    if (pending.has(x)) {
      if (prev) state.sessions[x.session.id] = { ...prev, seen_at: now };
    } else state.sessions[x.session.id] = { verdict: x.verdict, seen_at: now };
  }
  if (delivered && j.read > 0 && !seen.truncated) state.last_tick_at = now;
  return { state, logs, alert };
}
