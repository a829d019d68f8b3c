// The plugin's one stateful object: it takes what the hooks hand it, turns it
// into the core's observations, runs the core's judge (SessionForest, with
// children rolled up into their root) and acts on verdict transitions only:
// a /progress report through the queue and, for stalling or looping, a toast.
// Nothing here awaits the network on the tool path. A bash call that may write
// waits for its work-tree probe off the tool path; the observations after it
// queue behind it, so the judge sees them in the order replay does.

import {
  incidentReport,
  isCompleteHook,
  type Observation,
  obj,
  parseToolHook,
  SessionForest,
  text,
  toolHookCall,
  toTransition,
  type VerdictChange,
} from "../shared/index.ts";
import { CallDedupe, callFromPart, toolPartHead } from "./call-intake.ts";
import { DeliveryWatch } from "./delivery-notice.ts";
import { heartbeatSessions } from "./heartbeat.ts";
import { IdentityCache, identityHeaders, reportHeaders, sessionInfoOf } from "./identity.ts";
import { ObservationQueue, type Timer } from "./observation-queue.ts";
import { type ClientLike, OpencodeUi } from "./opencode-ui.ts";
import { ProbeHooks, type ProbeLike } from "./probe-hooks.ts";
import { type FetchLike, Reporter } from "./reporter.ts";
import { SessionInfos } from "./session-info.ts";
import type { Settings } from "./settings.ts";
import { type Toast, toastFor } from "./toast.ts";
import { requestKind, usageOf, userTurnOf } from "./turns.ts";
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
  private readonly queue: ObservationQueue;
  private readonly ui: OpencodeUi;
  private readonly delivery: DeliveryWatch;
  private readonly now: () => number;
  private readonly version: string;
  private readonly instanceId: string;
  private readonly directory: string | null;
  private timer: ReturnType<typeof setInterval> | null = null;
  private readonly counts = { calls: 0, turns: 0, transitions: 0, toasts: 0 };
  /** Every transition, newest last (bounded), for tests and the bench. */
  readonly transitions: VerdictChange[] = [];

  constructor(private readonly deps: StallguardDeps) {
    const s = deps.settings;
    this.now = deps.now ?? Date.now;
    this.ui = new OpencodeUi(deps.client, this.now);
    this.version = deps.version ?? PLUGIN_VERSION;
    this.instanceId = deps.instanceId ?? `sg_${Math.random().toString(36).slice(2, 12)}${Date.now()}`;
    this.directory = deps.directory ?? null;
    this.forest = new SessionForest(s.policy, { maxSessions: s.maxSessions });
    const lookup = deps.client?.session?.get;
    this.identity = new IdentityCache({
      capacity: s.maxSessions * 4,
      now: this.now,
      lookupBudgetMs: deps.lookupBudgetMs ?? 250,
      onParent: (id, parent) => this.forest.setParent(id, parent),
      ...(lookup
        ? {
            lookup: async (id: string) => {
              const res = obj(await lookup.call(deps.client?.session, { path: { id } }));
              const data = obj(res.data);
              if (text(data.id) !== id) throw new Error("session lookup failed");
              return text(data.parentID) ?? null;
            },
          }
        : {}),
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
    this.queue = new ObservationQueue({
      waitMs: deps.probeWaitMs ?? 2500,
      ...(deps.timer ? { timer: deps.timer } : {}),
      onError: (err) => this.log("error", "observe_failed", String(err)),
    });
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
    await this.queue.drained();
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
      queued: this.reporter.pending,
      waiting: this.queue.length,
    };
  }

  // -------------------------------------------------------------------------
  // Hook entry points.

  /** chat.headers: identity headers on every LLM request, and one turn per agent step. */
  async headers(input: unknown, output: unknown): Promise<void> {
    const i = obj(input);
    const sessionId = text(i.sessionID);
    const headers = obj(output).headers;
    if (!sessionId || typeof headers !== "object" || headers === null) return;
    const kind = requestKind(i.agent);
    if (kind === "turn") this.identity.setAgent(sessionId, text(i.agent));
    const agent = kind === "turn" ? this.identity.agentOf(sessionId) : String(i.agent ?? "unknown");
    const parentId = await this.identity.resolveParent(sessionId);
    const state = this.delivery.notice.state;
    const link = reportHeaders({ instanceId: this.instanceId, url: this.reporter.target, state });
    Object.assign(headers, identityHeaders({ sessionId, agent, parentId, version: this.version }), link);
    if (kind === "title") return;
    const time = this.now();
    if (kind === "compaction") {
      this.observe({ kind: "compaction", sessionId, time });
      return;
    }
    this.counts.turns++;
    const model = obj(i.model);
    const modelId = text(model.id);
    this.observe({
      kind: "turn",
      sessionId,
      parentId: parentId ?? null,
      agent,
      time,
      ...(modelId ? { model: modelId.slice(0, 120) } : {}),
    });
  }

  /** chat.message: a user turn; injected continuations are a signal. */
  chatMessage(input: unknown, output: unknown): void {
    const u = userTurnOf(input, output, this.deps.settings.policy.continuationMarkers);
    if (!u) return;
    this.identity.setAgent(u.sessionId, u.agent);
    this.observe({
      kind: "user",
      sessionId: u.sessionId,
      parentId: this.identity.parentOf(u.sessionId) ?? null,
      agent: this.identity.agentOf(u.sessionId),
      time: this.now(),
      injected: u.injected,
      textHash: u.textHash,
    });
  }

  /** tool.execute.before: hash a file before write replaces it; outside git, note what a bash call names. */
  async toolBefore(input: unknown, output: unknown): Promise<void> {
    if (await this.probes.before(input, obj(output).args)) return;
    return this.writes.before(input, output);
  }

  /**
   * tool.execute.after (successful tools): synchronous, no network, no
   * waiting. A bash call that may write is judged once its probe answers
   * (bounded), off the tool path.
   */
  toolAfter(input: unknown, output: unknown): void {
    const hook = parseToolHook(input, output);
    if (!isCompleteHook(hook)) return;
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
    if (tool === "task") {
      const child = text(obj(hook.metadata).sessionId);
      if (child && child !== sessionId) this.identity.setParent(child, sessionId);
    }
    this.counts.calls++;
    this.probes.afterTool(sessionId, callId, tool);
    // The parsed hook holds what opencode handed over now (it may reuse its objects later).
    const answer = this.probes.after(input, hook.args);
    if (!answer) {
      this.observe({ kind: "tool", call: toolHookCall(hook, ctx) });
      return;
    }
    this.queue.pushWaiting(answer, (worktree) => {
      this.apply({ kind: "tool", call: toolHookCall(hook, { ...ctx, worktree }) });
    });
  }

  /** The event hook: parents, failed tools, opencode's own continue turns, spend, compactions. */
  event(event: unknown): void {
    const e = obj(event);
    const props = e.properties;
    switch (e.type) {
      case "message.part.updated":
        this.onPart(obj(props).part);
        return;
      case "message.updated": {
        const usage = usageOf(props);
        if (usage) this.observe(usage);
        return;
      }
      case "session.created":
      case "session.updated": {
        const info = sessionInfoOf(props);
        if (!info) return;
        this.infos.note(props);
        this.identity.setParent(info.id, info.parentId);
        if (info.agent) this.identity.setAgent(info.id, info.agent);
        return;
      }
      case "session.deleted": {
        const info = sessionInfoOf(props);
        if (!info) return;
        this.identity.forget(info.id);
        this.infos.forget(info.id);
        return;
      }
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

  // -------------------------------------------------------------------------

  private parentFor(sessionId: string): string | null {
    const known = this.identity.parentOf(sessionId);
    if (known !== undefined) return known;
    // Not known yet (plugin loaded mid-session): ask in the background.
    this.identity.resolveParent(sessionId).catch(() => undefined);
    return null;
  }

  private onPart(part: unknown): void {
    const head = toolPartHead(part);
    if (!head) return;
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
    this.observe({ kind: "tool", call });
  }

  /** Resolves once every observation that waits for a probe has been judged. */
  settled(): Promise<void> {
    return this.queue.drained();
  }

  /** Judges an observation now, or after the probes that arrived before it. */
  private observe(obs: Observation): void {
    if (this.queue.length === 0) this.apply(obs);
    else this.queue.push(() => this.apply(obs));
  }

  private apply(obs: Observation): void {
    const { changes } = this.forest.observe(obs);
    for (const c of changes) this.onChange(c);
  }

  private onChange(c: VerdictChange): void {
    this.counts.transitions++;
    this.transitions.push(c);
    if (this.transitions.length > 200) this.transitions.shift();
    const report = incidentReport(c);
    this.reporter.enqueue(
      toTransition(c, { source: "plugin", report, pluginVersion: this.version.slice(0, 64) || "dev" }),
    );
    const toast = toastFor(c);
    if (toast) this.showToast(toast);
  }

  /** Shows a toast in opencode (plugin.toasts off: none); a failure is logged, never thrown. */
  showToast(toast: Toast): void {
    if (this.deps.settings.toasts && this.ui.toast(toast)) this.counts.toasts++;
  }

  /** Logs through opencode's log endpoint, at most once a minute per code. */
  log(level: "warn" | "error", code: string, message: string): void {
    this.ui.log(level, code, message);
  }
}
