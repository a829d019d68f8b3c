// The watchdog's decisions, pure: judge the trees a tick saw with the shared
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
import type { Seen, WatchedTree } from "./discover.ts";
import type { ApiSession } from "./opencode-api.ts";
import type { WatchdogState } from "./state.ts";

const SINCE_SLACK_MS = 30_000;
const MAX_LOOKBACK_MS = 7 * 24 * 3600_000;

export type RouterOutcome = "ok" | "down" | "rejected" | "refused" | "not_sent";
export type BlindReason = "no_server" | "unexpected_shape" | "api_error";

/** Sessions updated since this time are active this tick. */
export function activeSince(state: WatchdogState, config: Config, now: number): number {
  const last = state.last_tick_at;
  return last === null
    ? now - config.watchdog.lookback
    : Math.max(last - SINCE_SLACK_MS, now - MAX_LOOKBACK_MS);
}

export interface Judged {
  session: ApiSession;
  verdict: Verdict;
  change: Omit<VerdictChange, "previous">;
  /** The session's recent calls, for the local model's digest. */
  calls: DigestCall[];
}

/** Judges one session tree with the shared replay loop (a fresh forest, observations merged by time). */
export function judgeTree(tree: WatchedTree, config: Config): Judged[] {
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
  const out: Judged[] = [];
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

export interface TickJudgement {
  /** The tick's time. */
  at: number;
  /** The state after judging (warnings given, blind counters); verdicts are remembered after delivery. */
  state: WatchdogState;
  servers: number;
  sessions: number;
  flagged: number;
  blind: boolean;
  blindReason: BlindReason | null;
  judged: Judged[];
  /** Verdict changes since the last report, as transitions (no second opinion yet). */
  changed: Array<{ judged: Judged; transition: Transition }>;
  /** Lines for the log. */
  logs: string[];
}

/** One tick's verdicts from what it saw. */
export function judgeTick(
  prev: WatchdogState,
  seen: Seen,
  config: Config,
  now: number,
  opts: { blindAfter?: number } = {},
): TickJudgement {
  const state: WatchdogState = { ...prev, sessions: { ...prev.sessions } };
  const out: TickJudgement = {
    at: now,
    state,
    servers: seen.servers,
    sessions: 0,
    flagged: 0,
    blind: false,
    blindReason: null,
    judged: [],
    changed: [],
    logs: [],
  };
  // Nobody home: blind, quietly (the tick is still reported, so a dead watchdog stays visible).
  if (seen.servers === 0) {
    out.blind = true;
    out.blindReason = "no_server";
    state.blind_ticks++;
    if (state.blind_ticks >= (opts.blindAfter ?? 3) && !state.blind_warned) {
      out.logs.push(
        `watchdog: warning: no opencode server answered for ${state.blind_ticks} ticks (${seen.known} known); the watchdog is blind`,
      );
      state.blind_warned = true;
    }
    return out;
  }
  state.blind_ticks = 0;
  state.blind_warned = false;

  // An API shape we do not understand: blind, said once, never a silent "all healthy".
  // A server that answers the probe but not GET /session is no better: blind, not "all healthy".
  const { shapeErrors } = seen;
  const blindByShape =
    shapeErrors.length > 0 && (seen.listed === 0 || (seen.trees.length === 0 && seen.treeFailures > 0));
  const blindByApi = !blindByShape && seen.listed === 0;
  const problems = shapeErrors.length > 0 ? shapeErrors : seen.apiErrors;
  if ((shapeErrors.length > 0 || blindByApi) && !state.shape_warned) {
    out.logs.push(
      `watchdog: warning: ${blindByShape || blindByApi ? "the watchdog is blind: " : ""}${problems[0] ?? "no session list"}${
        problems.length > 1 ? ` (+${problems.length - 1} more)` : ""
      }`,
    );
    state.shape_warned = true;
  }
  if (shapeErrors.length === 0 && !blindByApi) state.shape_warned = false;

  // A session reached from two roots (a parent lookup failed on one path) is judged once.
  const ids = new Set<string>();
  out.judged = seen.trees
    .flatMap((t) => judgeTree(t, config))
    .filter((j) => !ids.has(j.session.id) && ids.add(j.session.id));
  out.sessions = out.judged.length;
  out.flagged = out.judged.filter((j) => j.verdict !== "ok").length;
  if (blindByShape || blindByApi) {
    out.blind = true;
    out.blindReason = blindByShape ? "unexpected_shape" : "api_error";
  }
  for (const j of out.judged) {
    const previous: Verdict = state.sessions[j.session.id]?.verdict ?? "ok";
    if (previous === j.verdict) continue;
    const change: VerdictChange = { ...j.change, previous };
    const report = incidentReport(change);
    out.changed.push({
      judged: j,
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
  j: TickJudgement,
  sent: ReadonlyArray<{ judged: Judged }>,
  router: { outcome: RouterOutcome; detail: string; url: string },
  seen: Pick<Seen, "listed" | "truncated">,
): TickSettlement {
  const now = j.at;
  const state: WatchdogState = { ...j.state, sessions: { ...j.state.sessions } };
  const logs: string[] = [];
  // No server: last_tick_at stays, so changes not yet delivered are listed again once opencode is back.
  if (j.blindReason === "no_server") return { state, logs, alert: null };
  const { outcome, detail } = router;
  const delivered = outcome === "ok" || outcome === "rejected";
  if (outcome === "rejected") logs.push(`watchdog: the router rejected the report: ${detail}`);
  if (outcome === "refused")
    logs.push(`watchdog: the router refused the report (${detail}); check STALLGUARD_TOKEN`);
  if (outcome === "ok") state.router_down_alerted = false;
  let alert: TickSettlement["alert"] = null;
  if (outcome === "down") {
    logs.push(`watchdog: the router at ${router.url} is down (${detail})`);
    if (!state.router_down_alerted) {
      const top = j.judged.find((x) => x.verdict === "looping") ?? j.judged.find((x) => x.verdict !== "ok");
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
  const pending = new Set(delivered ? [] : sent.map((c) => c.judged));
  for (const x of j.judged) {
    const prev = state.sessions[x.session.id];
    if (pending.has(x)) {
      if (prev) state.sessions[x.session.id] = { ...prev, seen_at: now };
    } else state.sessions[x.session.id] = { verdict: x.verdict, seen_at: now };
  }
  if (delivered && seen.listed > 0 && !seen.truncated) state.last_tick_at = now;
  return { state, logs, alert };
}
