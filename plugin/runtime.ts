// The plugin's one stateful object: it takes the typed values the hooks map
// from opencode's shapes (plugin/events.ts), turns them into the core's
// observations for the verdict flow (verdict-flow.ts: judge, report, toast),
// and keeps what the plugin knows between hooks: who each session is, the
// calls already counted, the work-tree probe, the heartbeat. Nothing here
// awaits the network on the tool path; a bash call that may write waits for
// its work-tree probe off the tool path.

import { obj, SessionForest, text, toolHookCall, type VerdictChange } from "../shared/index.ts";
import { CallDedupe, callFromPart } from "./call-intake.ts";
import { DeliveryWatch } from "./delivery-notice.ts";
import type {
  LlmRequest,
  PluginEvent,
  ToolFinished,
  ToolPartHead,
  ToolStarting,
  UserTurn,
} from "./events.ts";
import { heartbeatSessions } from "./heartbeat.ts";
import { IdentityCache, identityHeaders, reportHeaders } from "./identity.ts";
import type { Timer } from "./observation-queue.ts";
import { type ClientLike, OpencodeUi } from "./opencode-ui.ts";
import { ProbeHooks, type ProbeLike } from "./probe-hooks.ts";
import { type FetchLike, Reporter } from "./reporter.ts";
import { SessionInfos } from "./session-info.ts";
import type { Settings } from "./settings.ts";
import type { Toast } from "./toast.ts";
import { VerdictFlow } from "./verdict-flow.ts";
import { PLUGIN_VERSION } from "./version.ts";
import { hashFile, WriteProbe } from "./write-probe.ts";

export type { ClientLike } from "./opencode-ui.ts";

export interface StallguardDeps {
  settings: Settings;
  /** The opencode instance directory; targets are made relative to it. */
  directory?: string | null;
  client?: ClientLike;
  fetch?: FetchLike;
  now?: () => number;
  instanceId?: string;
  version?: string;
  hashFile?: (path: string) => Promise<string | null | undefined>;
  /** Milliseconds chat.headers waits for a parent lookup. */
  lookupBudgetMs?: number;
  retryMs?: number;
  /** The work-tree probe for bash calls; none: bash writes are judged from the command alone. */
  probe?: ProbeLike | null;
  /** Longest a bash call's observation (and everything after it) waits for its probe. */
  probeWaitMs?: number;
  timer?: Timer;
  /** How long reports must fail before the plugin says so (toast and log). Default 5 s. */
  noticeGraceMs?: number;
  /** The home folder, written ~ in the folders heartbeats carry (default os.homedir()). */
  home?: string;
}

export type { ProbeLike } from "./probe-hooks.ts";

export interface StallguardStats {
  sessions: number;
  identities: number;
  calls: number;
  turns: number;
  transitions: number;
  toasts: number;
  queued: number;
  /** Observations waiting behind a work-tree probe. */
  waiting: number;
}

export class Stallguard {
  readonly forest: SessionForest;
  readonly identity: IdentityCache;
  readonly reporter: Reporter;
  /** Title, folder and start of each session, for the heartbeat. */
  readonly infos: SessionInfos;
  private readonly dedupe: CallDedupe;
  private readonly writes: WriteProbe;
  private readonly probes: ProbeHooks;
  private readonly flow: VerdictFlow;
  private readonly ui: OpencodeUi;
  private readonly delivery: DeliveryWatch;
  private readonly now: () => number;
  private readonly version: string;
  private readonly instanceId: string;
  private readonly directory: string | null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly counts = { calls: 0, turns: 0, toasts: 0 };

  constructor(private readonly deps: StallguardDeps) {
    const s = deps.settings;
    this.now = deps.now ?? Date.now;
    this.ui = new OpencodeUi(deps.client, this.now);
    this.version = deps.version ?? PLUGIN_VERSION;
    this.instanceId = deps.instanceId ?? `sg_${Math.random().toString(36).slice(2, 12)}${Date.now()}`;
    this.directory = deps.directory ?? null;
    this.forest = new SessionForest(s.policy, { maxSessions: s.maxSessions });
    this.identity = new IdentityCache({
      capacity: s.maxSessions * 4,
      now: this.now,
      lookupBudgetMs: deps.lookupBudgetMs ?? 250,
      onParent: (id, parent) => this.forest.setParent(id, parent),
      ...parentLookup(deps.client),
    });
    this.delivery = new DeliveryWatch({
      graceMs: deps.noticeGraceMs,
      now: this.now,
      ui: this.ui,
      toast: (t) => this.showToast(t),
      queued: () => this.reporter.pending,
      settings: s,
    });
    this.reporter = new Reporter({
      url: () => s.routerUrl().url,
      token: s.token,
      onDelivery: (d) => this.delivery.record(d),
      timeoutMs: s.timeoutMs,
      queueSize: s.queueSize,
      ...(deps.fetch ? { fetch: deps.fetch } : {}),
      ...(deps.retryMs ? { retryMs: deps.retryMs } : {}),
      log: (level, code, message) => this.log(level, code, message),
    });
    this.infos = new SessionInfos(s.maxSessions * 4, deps.home);
    this.dedupe = new CallDedupe(Math.max(1024, s.maxSessions * 8));
    this.writes = new WriteProbe(this.directory, 1024, deps.hashFile ?? hashFile);
    this.probes = new ProbeHooks(deps.probe ?? null, (err) => this.log("error", "probe_failed", String(err)));
    this.flow = new VerdictFlow({
      forest: this.forest,
      reporter: this.reporter,
      toast: (t) => this.showToast(t),
      onError: (err) => this.log("error", "observe_failed", String(err)),
      version: this.version,
      probeWaitMs: deps.probeWaitMs ?? 2500,
      ...(deps.timer ? { timer: deps.timer } : {}),
    });
  }

  /** Every transition, newest last (bounded), for tests and the bench. */
  get transitions(): readonly VerdictChange[] {
    return this.flow.transitions;
  }

  /** Starts the heartbeat (one now, then every settings.heartbeatMs). */
  start(): void {
    if (this.timer) return;
    this.probes.refresh();
    this.heartbeat();
    this.timer = setInterval(() => {
      try {
        this.heartbeat();
      } catch (err) {
        this.log("error", "heartbeat_failed", String(err));
      }
    }, this.deps.settings.heartbeatMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  async dispose(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // Verdicts still waiting for a probe are judged (bounded by the queue's wait), then sent.
    this.probes.close();
    await this.flow.settled();
    let cut: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.reporter.flush(),
      new Promise<void>((r) => {
        cut = setTimeout(r, this.deps.settings.timeoutMs);
      }),
    ]);
    clearTimeout(cut);
    this.reporter.close();
  }

  stats(): StallguardStats {
    return {
      sessions: this.forest.size,
      identities: this.identity.size,
      ...this.counts,
      transitions: this.flow.count,
      queued: this.reporter.pending,
      waiting: this.flow.waiting,
    };
  }

  /** The continuation markers a user turn is checked against (chat.message's mapping). */
  get continuationMarkers(): readonly string[] {
    return this.deps.settings.policy.continuationMarkers;
  }

  // -------------------------------------------------------------------------
  // What the hooks (plugin/hooks/) hand over, mapped by plugin/events.ts.

  /** chat.headers: adds the headers for one LLM request to `headers`; one turn per agent step. */
  async llmRequest(req: LlmRequest, headers: Record<string, string>): Promise<void> {
    const { sessionId, kind } = req;
    if (kind === "turn") this.identity.setAgent(sessionId, req.agent);
    const agent = kind === "turn" ? this.identity.agentOf(sessionId) : (req.agent ?? "unknown");
    const parentId = await this.identity.resolveParent(sessionId);
    const state = this.delivery.notice.state;
    const link = reportHeaders({ instanceId: this.instanceId, url: this.reporter.target, state });
    Object.assign(headers, identityHeaders({ sessionId, agent, parentId, version: this.version }), link);
    if (kind === "title") return;
    const time = this.now();
    if (kind === "compaction") {
      this.flow.observe({ kind: "compaction", sessionId, time });
      return;
    }
    this.counts.turns++;
    this.flow.observe({
      kind: "turn",
      sessionId,
      parentId: parentId ?? null,
      agent,
      time,
      ...(req.model ? { model: req.model } : {}),
    });
  }

  /** chat.message: a user turn; injected continuations are a signal. */
  userTurn(u: UserTurn): void {
    this.identity.setAgent(u.sessionId, u.agent);
    this.flow.observe({
      kind: "user",
      sessionId: u.sessionId,
      parentId: this.identity.parentOf(u.sessionId) ?? null,
      agent: this.identity.agentOf(u.sessionId),
      time: this.now(),
      injected: u.injected,
      textHash: u.textHash,
    });
  }

  /** tool.execute.before: hash a file before write replaces it; a bash call that may write: its probe. */
  async toolStarting(call: ToolStarting): Promise<void> {
    if (await this.probes.before(call)) return;
    return this.writes.before(call);
  }

  /**
   * tool.execute.after (successful tools): synchronous, no network, no
   * waiting. A bash call that may write is judged once its probe answers
   * (bounded), off the tool path.
   */
  toolFinished({ hook, bash, childSessionId }: ToolFinished): void {
    const { sessionId, callId, tool } = hook;
    const ctx = {
      parentId: this.parentFor(sessionId),
      agent: this.identity.agentOf(sessionId),
      time: this.now(),
      directory: this.directory,
      testPatterns: this.deps.settings.policy.testPatterns,
      writePrior: this.writes.take(sessionId, callId),
    };
    this.dedupe.fromHook(sessionId, callId);
    if (childSessionId) this.identity.setParent(childSessionId, sessionId);
    this.counts.calls++;
    this.probes.afterTool(sessionId, callId, tool);
    const answer = this.probes.after(sessionId, callId, bash);
    if (!answer) {
      this.flow.observe({ kind: "tool", call: toolHookCall(hook, ctx) });
      return;
    }
    this.flow.observeAfter(answer, (worktree) => ({
      kind: "tool",
      call: toolHookCall(hook, { ...ctx, worktree }),
    }));
  }

  /** The event hook: failed tools, spend, parents and what opencode shows of a session. */
  event(e: PluginEvent): void {
    switch (e.type) {
      case "tool.part.ended":
        this.toolPartEnded(e.head, e.part);
        return;
      case "usage":
        this.flow.observe(e.usage);
        return;
      case "session.seen": {
        const seen = e.session;
        this.infos.note(seen);
        this.identity.setParent(seen.id, seen.parentId);
        if (seen.agent) this.identity.setAgent(seen.id, seen.agent);
        return;
      }
      case "session.deleted":
        this.identity.forget(e.sessionId);
        this.infos.forget(e.sessionId);
        return;
      default:
        return;
    }
  }

  /** Sends the heartbeat and evicts sessions idle for longer than plugin.idle_evict. */
  heartbeat(): void {
    const now = this.now();
    for (const id of this.forest.evictIdle(now - this.deps.settings.idleEvictMs)) {
      this.identity.forget(id);
      this.infos.forget(id);
    }
    this.reporter.enqueue({
      type: "heartbeat",
      instance_id: this.instanceId,
      plugin_version: this.version.slice(0, 64) || "dev",
      at: Math.floor(now),
      sessions: heartbeatSessions(this.forest, (id) => this.infos.get(id)),
    });
  }

  /** Resolves once every observation that waits for a probe has been judged. */
  settled(): Promise<void> {
    return this.flow.settled();
  }

  /** Shows a toast in opencode (plugin.toasts off: none); a failure is logged, never thrown. */
  showToast(toast: Toast): void {
    if (this.deps.settings.toasts && this.ui.toast(toast)) this.counts.toasts++;
  }

  /** Logs through opencode's log endpoint, at most once a minute per code. */
  log(level: "warn" | "error", code: string, message: string): void {
    this.ui.log(level, code, message);
  }

  // -------------------------------------------------------------------------

  private parentFor(sessionId: string): string | null {
    const known = this.identity.parentOf(sessionId);
    if (known !== undefined) return known;
    // Not known yet (plugin loaded mid-session): ask in the background.
    this.identity.resolveParent(sessionId).catch(() => undefined);
    return null;
  }

  /** A finished tool part: a tool that threw shows only here; a completed one the hook counted is skipped. */
  private toolPartEnded(head: ToolPartHead, part: unknown): void {
    // A tool that threw has no after hook: this part is the only sign it ended.
    if (head.status === "error") this.probes.ended(head.sessionId, head.callId);
    if (!this.dedupe.fromPart(head.partId, head.sessionId, head.callId, head.status)) return;
    const call = callFromPart(part, {
      parentId: this.parentFor(head.sessionId),
      agent: this.identity.agentOf(head.sessionId),
      time: this.now(),
      directory: this.directory,
      testPatterns: this.deps.settings.policy.testPatterns,
    });
    if (!call) return;
    this.counts.calls++;
    this.flow.observe({ kind: "tool", call });
  }
}

/** Asks opencode's client for a session's parent (a session first seen mid-run). */
function parentLookup(client: ClientLike | undefined) {
  const get = client?.session?.get;
  if (!get) return {};
  return {
    lookup: async (id: string) => {
      const res = obj(await get.call(client?.session, { path: { id } }));
      const data = obj(res.data);
      if (text(data.id) !== id) throw new Error("session lookup failed");
      return text(data.parentID) ?? null;
    },
  };
}
