// One watchdog tick: find opencode, read the sessions active since the last
// tick (with their whole session trees, so children roll up into parents),
// judge them with the core's SessionForest, and report only verdict changes
// to the router. It reports; it never aborts or compacts anything.
import {
  type Config,
  incidentReport,
  incidentSummary,
  type Observation,
  observationsFromMessages,
  type ProgressMessage,
  parseProgressBody,
  policyFromConfig,
  SessionForest,
  slugAgent,
  type Transition,
  toTransition,
  type Verdict,
  type VerdictChange,
  type WatchdogTick,
  watchdogModel,
  watchdogReadOnlyAgents,
} from "../../shared/index.ts";
import { notifyCritical } from "./desktop.ts";
import { buildDigest, type DigestCall, digestCall } from "./digest.ts";
import { acquireLock } from "./lock.ts";
import { askSecondOpinion, type SecondOpinion } from "./ollama.ts";
import { type ApiSession, OpencodeApi, ShapeError } from "./opencode-api.ts";
import { collectServers, opencodeAuthHeader, probeServer, rcServersPath, readRcServers } from "./servers.ts";
import { loadState, saveState } from "./state.ts";

export interface WatchdogTickOptions {
  config: Config;
  /** Extra opencode server URLs (the CLI's --server flags). */
  servers?: string[];
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
  /** Consecutive ticks with no server answering before the blind warning is logged (default 3). */
  blindAfter?: number;
}

export type RouterOutcome = "ok" | "down" | "rejected" | "refused" | "not_sent";

export interface WatchdogTickResult {
  at: number;
  /** Another tick held the lock: this one did nothing. */
  skipped: boolean;
  /** opencode servers that answered. */
  servers: number;
  /** Sessions judged (active ones plus the rest of their trees). */
  sessions: number;
  /** Judged sessions whose verdict is not ok. */
  flagged: number;
  /**
   * No server answered (no_server), opencode answered in a shape the watchdog does not
   * understand (unexpected_shape), or no answering server listed its sessions (api_error).
   * On the wire, blind with servers > 0 means the watchdog is blind while opencode runs.
   */
  blind: boolean;
  blindReason: "no_server" | "unexpected_shape" | "api_error" | null;
  /** Verdict changes found this tick (sent, or attempted when the router was down). */
  transitions: Transition[];
  router: RouterOutcome;
  /** The router-down desktop alert was sent on this tick. */
  alerted: boolean;
  /** Second-opinion requests made to the local model. */
  modelCalls: number;
}

const LIST_LIMIT = 500;
const MAX_SESSIONS = 500;
const MAX_TREE = 200;
const MAX_DEPTH = 16;
const SINCE_SLACK_MS = 30_000;
const MAX_LOOKBACK_MS = 7 * 24 * 3600_000;
const BATCH = 100;

interface Known {
  session: ApiSession;
  api: OpencodeApi;
}

function clockOf(now: WatchdogTickOptions["now"]): () => number {
  if (typeof now === "function") return now;
  if (typeof now === "number") return () => now;
  return Date.now;
}

function timeOf(o: Observation): number {
  return o.kind === "tool" ? o.call.time : o.time;
}

/** Agents in the slug form the core's read-only list and the wire use. */
function slugObservation(o: Observation): Observation {
  if (o.kind === "tool") return { ...o, call: { ...o.call, agent: slugAgent(o.call.agent) } };
  if (o.kind === "turn" || o.kind === "user") return { ...o, agent: slugAgent(o.agent) };
  return o;
}

interface Judged {
  session: ApiSession;
  verdict: Verdict;
  change: Omit<VerdictChange, "previous">;
  calls: DigestCall[];
}

/** Judges one session tree with a fresh forest, observations merged by time as the replay does. */
function judgeTree(
  tree: ReadonlyArray<{ session: ApiSession; messages: Array<{ info: unknown; parts: unknown }> }>,
  config: Config,
): Judged[] {
  const policy = policyFromConfig(config, watchdogReadOnlyAgents(config));
  const forest = new SessionForest(policy, { maxSessions: MAX_TREE * 2 });
  for (const t of tree) forest.setParent(t.session.id, t.session.parentID ?? null);
  const all = tree.flatMap((t, si) =>
    observationsFromMessages(
      { id: t.session.id, parentId: t.session.parentID ?? null, directory: t.session.directory ?? null },
      t.messages,
      { testPatterns: policy.testPatterns, continuationMarkers: policy.continuationMarkers },
    ).map((obs, i) => ({ obs: slugObservation(obs), si, i })),
  );
  all.sort((a, b) => timeOf(a.obs) - timeOf(b.obs) || a.si - b.si || a.i - b.i);
  const lastChangeAt = new Map<string, number>();
  const calls = new Map<string, DigestCall[]>();
  for (const { obs } of all) {
    const { event, changes } = forest.observe(obs);
    if (event) {
      const list = calls.get(event.sessionId) ?? [];
      list.push(digestCall(event));
      if (list.length > 200) list.shift();
      calls.set(event.sessionId, list);
    }
    for (const c of changes) lastChangeAt.set(c.sessionId, c.at);
  }
  const out: Judged[] = [];
  for (const t of tree) {
    const tracker = forest.get(t.session.id);
    const verdict = tracker?.lastVerdict.verdict ?? "ok";
    const signals = tracker?.signals();
    if (!tracker || !signals) continue;
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
        signals,
        at: Math.floor(lastChangeAt.get(t.session.id) ?? t.session.time.updated),
      },
    });
  }
  return out;
}

async function postProgress(
  url: string,
  messages: ProgressMessage[],
  opts: { token: string | null; timeoutMs: number; fetchImpl: typeof fetch },
): Promise<{ outcome: RouterOutcome; detail: string }> {
  for (let i = 0; i < messages.length; i += BATCH) {
    let res: Response;
    try {
      res = await opts.fetchImpl(`${url.replace(/\/+$/, "")}/progress`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
        },
        body: JSON.stringify(messages.slice(i, i + BATCH)),
        signal: AbortSignal.timeout(opts.timeoutMs),
      });
    } catch (err) {
      return { outcome: "down", detail: (err as Error).message };
    }
    const text = (await res.text().catch(() => "")).slice(0, 300);
    if (res.status >= 500) return { outcome: "down", detail: `HTTP ${res.status}` };
    if (res.status === 400 || res.status === 413)
      return { outcome: "rejected", detail: `HTTP ${res.status} ${text}` };
    if (!res.ok) return { outcome: "refused", detail: `HTTP ${res.status} ${text}` };
  }
  return { outcome: "ok", detail: "" };
}

function tokenFrom(opts: WatchdogTickOptions, env: NodeJS.ProcessEnv): string | null {
  if (opts.token !== undefined) return opts.token || null;
  return env.STALLGUARD_TOKEN || env[opts.config.plugin.token_env] || null;
}

export async function runWatchdogTick(opts: WatchdogTickOptions): Promise<WatchdogTickResult> {
  const env = opts.env ?? process.env;
  const clock = clockOf(opts.now);
  const log = opts.log ?? ((line: string) => console.error(line));
  const fetchImpl = opts.fetchImpl ?? fetch;
  const wd = opts.config.watchdog;
  const timeoutMs = wd.timeout;
  const at = Math.floor(clock());
  const result: WatchdogTickResult = {
    at,
    skipped: false,
    servers: 0,
    sessions: 0,
    flagged: 0,
    blind: false,
    blindReason: null,
    transitions: [],
    router: "not_sent",
    alerted: false,
    modelCalls: 0,
  };

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
    const state = loadState(opts.statePath, log);
    const auth = opencodeAuthHeader(env);
    const registry = readRcServers(opts.rcServersPath ?? rcServersPath(env), log);
    const urls = collectServers({ registry, config: wd.servers, flags: opts.servers ?? [] });
    const probes = await Promise.all(urls.map((u) => probeServer(u, { timeoutMs, fetchImpl, auth })));
    const apis = urls
      .filter((_, i) => probes[i])
      .map((u) => new OpencodeApi(u, { timeoutMs, fetchImpl, auth }));
    result.servers = apis.length;
    const token = tokenFrom(opts, env);
    const post = (messages: ProgressMessage[]) =>
      postProgress(opts.routerUrl, messages, { token, timeoutMs, fetchImpl });
    const tickMessage = (): WatchdogTick => ({
      type: "watchdog_tick",
      at,
      servers: result.servers,
      sessions: result.sessions,
      flagged: result.flagged,
      blind: result.blind,
    });

    // Nobody home: exit quietly (the tick is still recorded, so a dead watchdog stays visible).
    if (apis.length === 0) {
      result.blind = true;
      result.blindReason = "no_server";
      state.blind_ticks++;
      if (state.blind_ticks >= (opts.blindAfter ?? 3) && !state.blind_warned) {
        log(
          `watchdog: warning: no opencode server answered for ${state.blind_ticks} ticks (${urls.length} known); the watchdog is blind`,
        );
        state.blind_warned = true;
      }
      // last_tick_at stays: changes not yet delivered are listed again once opencode is back.
      result.router = (await post([tickMessage()])).outcome;
      saveState(opts.statePath, state);
      return result;
    }
    state.blind_ticks = 0;
    state.blind_warned = false;

    // 1. Sessions active since the last tick, from every answering server (shared DBs repeat them).
    const lastTick = state.last_tick_at;
    const since =
      lastTick === null ? at - wd.lookback : Math.max(lastTick - SINCE_SLACK_MS, at - MAX_LOOKBACK_MS);
    const shapeErrors: string[] = [];
    const apiErrors: string[] = [];
    const known = new Map<string, Known>();
    let listed = 0;
    for (const api of apis) {
      try {
        const list = await api.listSessions(since, LIST_LIMIT);
        listed++;
        for (const s of list) if (!known.has(s.id)) known.set(s.id, { session: s, api });
      } catch (err) {
        if (err instanceof ShapeError) shapeErrors.push(`${api.baseUrl}: ${err.message}`);
        else {
          apiErrors.push(`${api.baseUrl}: ${(err as Error).message}`);
          log(`watchdog: ${api.baseUrl}: ${(err as Error).message}`);
        }
      }
    }

    // 2. Whole trees: walk up to each active session's root, then down through its children.
    const roots = new Map<string, OpencodeApi>();
    for (const [id, k] of [...known]) {
      let cur = k.session;
      const seen = new Set([id]);
      try {
        for (let d = 0; d < MAX_DEPTH && cur.parentID && !seen.has(cur.parentID); d++) {
          seen.add(cur.parentID);
          const parent = known.get(cur.parentID)?.session ?? (await k.api.getSession(cur.parentID));
          if (!parent) break;
          if (!known.has(parent.id)) known.set(parent.id, { session: parent, api: k.api });
          cur = parent;
        }
      } catch (err) {
        if (err instanceof ShapeError) shapeErrors.push(`${k.api.baseUrl}: ${err.message}`);
        else log(`watchdog: ${k.api.baseUrl}: ${(err as Error).message}`);
      }
      if (!roots.has(cur.id)) roots.set(cur.id, k.api);
    }
    const trees: Array<Array<{ session: ApiSession; messages: Array<{ info: unknown; parts: unknown }> }>> =
      [];
    let total = 0;
    let treeFailures = 0;
    let truncated = false;
    for (const [rootId, api] of roots) {
      if (total >= MAX_SESSIONS) {
        log(`watchdog: more than ${MAX_SESSIONS} sessions active; the rest wait for the next tick`);
        truncated = true;
        break;
      }
      const rootSession = known.get(rootId)?.session;
      if (!rootSession) continue;
      try {
        const members: ApiSession[] = [rootSession];
        const queue = [rootSession.id];
        const inTree = new Set(queue);
        while (queue.length > 0 && members.length < MAX_TREE) {
          const id = queue.shift() as string;
          for (const child of await api.children(id)) {
            if (inTree.has(child.id) || members.length >= MAX_TREE) continue;
            inTree.add(child.id);
            members.push(child);
            queue.push(child.id);
          }
        }
        const tree = [];
        for (const s of members) tree.push({ session: s, messages: await api.messages(s.id) });
        trees.push(tree);
        total += tree.length;
      } catch (err) {
        treeFailures++;
        if (err instanceof ShapeError) shapeErrors.push(`${api.baseUrl}: ${err.message}`);
        else log(`watchdog: ${api.baseUrl}: ${(err as Error).message}`);
      }
    }

    // An API shape we do not understand: blind, said once, never a silent "all healthy".
    // A server that answers the probe but not GET /session is no better: blind, not "all healthy".
    const blindByShape = shapeErrors.length > 0 && (listed === 0 || (trees.length === 0 && treeFailures > 0));
    const blindByApi = !blindByShape && listed === 0;
    const problems = shapeErrors.length > 0 ? shapeErrors : apiErrors;
    if ((shapeErrors.length > 0 || blindByApi) && !state.shape_warned) {
      log(
        `watchdog: warning: ${blindByShape || blindByApi ? "the watchdog is blind: " : ""}${problems[0] ?? "no session list"}${
          problems.length > 1 ? ` (+${problems.length - 1} more)` : ""
        }`,
      );
      state.shape_warned = true;
    }
    if (shapeErrors.length === 0 && !blindByApi) state.shape_warned = false;

    // 3. Judge with the core; compare with the verdicts last reported.
    // A session reached from two roots (a parent lookup failed on one path) is judged once.
    const judgedIds = new Set<string>();
    const judged = trees
      .flatMap((t) => judgeTree(t, opts.config))
      .filter((j) => !judgedIds.has(j.session.id) && judgedIds.add(j.session.id));
    result.sessions = judged.length;
    result.flagged = judged.filter((j) => j.verdict !== "ok").length;
    if (blindByShape || blindByApi) {
      result.blind = true;
      result.blindReason = blindByShape ? "unexpected_shape" : "api_error";
    }
    const useModel = opts.config.local_compute.enabled && wd.local_llm_enabled;
    const model = watchdogModel(opts.config);
    const changed: Array<{ j: Judged; t: Transition }> = [];
    for (const j of judged) {
      const previous: Verdict = state.sessions[j.session.id]?.verdict ?? "ok";
      if (previous === j.verdict) continue;
      const change: VerdictChange = { ...j.change, previous };
      const report = incidentReport({
        sessionId: change.sessionId,
        agent: change.agent,
        parentId: change.parentId,
        verdict: change.verdict,
        reason: change.reason,
        signals: change.signals,
      });
      const t = toTransition(change, { source: "watchdog", report, pluginVersion: null });
      // 4. Second opinion only on flagged sessions; a down or slow model leaves it null.
      if (useModel && j.verdict !== "ok") {
        result.modelCalls++;
        const op: SecondOpinion | null = await askSecondOpinion({
          baseUrl: opts.config.verification.base_url,
          model,
          digest: buildDigest({
            agent: change.agent,
            verdict: change.verdict,
            reason: change.reason,
            signals: change.signals,
            calls: j.calls,
          }),
          timeoutMs,
          fetchImpl,
        });
        if (!op) log(`watchdog: no second opinion from ${model}; the deterministic verdict stands`);
        t.second_opinion = op;
      }
      const check = parseProgressBody(t);
      if (!check.ok) {
        log(`watchdog: dropped an invalid transition for ${j.session.id}: ${check.errors[0]}`);
        continue;
      }
      changed.push({ j, t });
    }
    result.transitions = changed.map((c) => c.t);

    // 5. Report, do not act.
    const sent = await post([...result.transitions, tickMessage()]);
    result.router = sent.outcome;
    const delivered = sent.outcome === "ok" || sent.outcome === "rejected";
    if (sent.outcome === "rejected") log(`watchdog: the router rejected the report: ${sent.detail}`);
    if (sent.outcome === "refused")
      log(`watchdog: the router refused the report (${sent.detail}); check STALLGUARD_TOKEN`);
    if (sent.outcome === "ok") state.router_down_alerted = false;
    if (sent.outcome === "down") {
      log(`watchdog: the router at ${opts.routerUrl} is down (${sent.detail})`);
      if (!state.router_down_alerted) {
        const top = judged.find((j) => j.verdict === "looping") ?? judged.find((j) => j.verdict !== "ok");
        const body = [
          `The stallguard router at ${opts.routerUrl} is not answering, so nothing is being judged or alerted.`,
          `${result.flagged} session(s) flagged now.`,
          top ? incidentSummary({ ...top.change }) : "",
        ]
          .filter(Boolean)
          .join(" ");
        const r = await notifyCritical("stallguard: router is down", body, { env });
        if (r.ok) {
          result.alerted = true;
          state.router_down_alerted = true;
        } else log(`watchdog: desktop alert failed: ${r.detail}`);
      }
    }

    // 6. Remember: verdicts only once delivered, so an undelivered change is reported again.
    const pending = new Set(delivered ? [] : changed.map((c) => c.j));
    for (const j of judged) {
      const prev = state.sessions[j.session.id];
      if (pending.has(j)) {
        if (prev) prev.seen_at = at;
      } else state.sessions[j.session.id] = { verdict: j.verdict, seen_at: at };
    }
    // Undelivered: keep the old tick time so the next tick lists these sessions again.
    if (delivered && listed > 0 && !truncated) state.last_tick_at = at;
    saveState(opts.statePath, state);
    return result;
  } finally {
    lock.release();
  }
}
