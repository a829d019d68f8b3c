// One POST /progress body into the tables (storeProgress), inside the caller's transaction:
// transitions (identity, history, flags, the plan's mode state, effects and
// directives, the verdict and the reporter's numbers), heartbeats, directive
// results and watchdog ticks, then the open directives for the plugin that
// reported. A kill -9 anywhere leaves all of it or none of it. One judge per
// session: a watchdog transition for a session whose plugin reports (a
// heartbeat or transition within the live window) is not stored; the answer
// names it, so the watchdog reports it again once the plugin is gone.
import type { Directive, Heartbeat, ProgressMessage, Transition } from "../../shared/index.ts";
import type { TransitionContext, TransitionPlan } from "../modes/plan.ts";
import { isFlag, takesVerdict, watchdogCovered } from "../modes/report-rules.ts";
import type { ModesStore } from "../modes/store.ts";
import type { Tables } from "./open-tables.ts";

/** Plans a fresh transition from what the store knows (router-ext/modes/plan.ts, with the live knobs). */
export type PlanFn = (ctx: TransitionContext, t: Transition) => TransitionPlan;

export interface ProgressOptions {
  now: number;
  plan: PlanFn;
  /** Directives older than this are not handed out again (default 1 h). */
  directiveMaxAgeMs?: number;
  /** A plugin heard from within this long judges its sessions; the watchdog's word is then not stored. */
  pluginLiveMs?: number;
}

/** A transition stored for the first time, with what its plan caused. */
export interface StoredTransition {
  transition: Transition;
  plan: TransitionPlan;
}

export interface ProgressResult {
  accepted: number;
  duplicates: number;
  /** Transitions stored for the first time, with what they caused. */
  fresh: StoredTransition[];
  /** Open directives for the sessions a plugin reported in this body (marked sent). */
  directives: Directive[];
  /** Watchdog transitions not stored because the session's plugin reports it. */
  covered: string[];
}

export async function storeProgress(
  t: Tables,
  modes: ModesStore,
  messages: readonly ProgressMessage[],
  opts: ProgressOptions,
): Promise<ProgressResult> {
  const out: ProgressResult = { accepted: 0, duplicates: 0, fresh: [], directives: [], covered: [] };
  const reported = new Set<string>();
  for (const m of messages) {
    if (m.type === "transition") {
      if (m.source === "watchdog" && (await pluginCovers(t, m.session_id, opts))) {
        await t.counters.bump("watchdog_covered_total");
        out.covered.push(m.session_id);
        continue;
      }
      const plan = await applyTransition(t, modes, m, opts);
      if (plan) {
        out.accepted++;
        out.fresh.push({ transition: m, plan });
      } else out.duplicates++;
      if (m.source === "plugin") reported.add(m.session_id).add(m.root_id);
    } else if (m.type === "heartbeat") {
      await applyHeartbeat(t, modes, m, opts.now);
      for (const s of m.sessions) reported.add(s.session_id).add(s.root_id);
      out.accepted++;
    } else if (m.type === "directive_result") {
      await modes.applyResult(m, opts.now);
      out.accepted++;
    } else {
      await t.ticks.insert(m, opts.now);
      out.accepted++;
    }
  }
  if (out.accepted > 0) await t.counters.bump("progress_messages_total", out.accepted);
  if (out.duplicates > 0) await t.counters.bump("progress_duplicates_total", out.duplicates);
  out.directives = await modes.pendingFor(reported, { now: opts.now, maxAgeMs: opts.directiveMaxAgeMs });
  return out;
}

/** The session's plugin reported within the live window: it is the one judge of that session. */
async function pluginCovers(t: Tables, sessionId: string, opts: ProgressOptions): Promise<boolean> {
  if (opts.pluginLiveMs === undefined) return false;
  const seenAt = (await t.sessions.get(sessionId))?.plugin_seen_at ?? null;
  return watchdogCovered(seenAt, opts.now, opts.pluginLiveMs);
}

/** Stores a transition and what its plan says; null for an id stored before. */
async function applyTransition(
  t: Tables,
  modes: ModesStore,
  tr: Transition,
  opts: ProgressOptions,
): Promise<TransitionPlan | null> {
  const { now } = opts;
  if (!(await t.transitions.insert(tr, now))) return null;
  const before = await t.sessions.learn(
    {
      session_id: tr.session_id,
      parent_id: tr.parent_id,
      root_id: tr.root_id,
      agent: tr.agent,
      source: tr.source,
      verdict: tr.verdict,
    },
    now,
  );
  if (tr.source === "plugin" && tr.plugin_version !== null)
    await t.sessions.pluginSeen(tr.session_id, tr.plugin_version, now);
  const row = await t.sessions.get(tr.session_id);
  if (!row) throw new Error(`session ${tr.session_id} vanished inside its own transaction`);
  const flagged = isFlag(tr.previous, tr.verdict);
  if (flagged) await t.counters.bump(`warnings_total:${tr.verdict}`);
  await t.counters.bump(`transitions_total:${tr.source}`);
  await t.sessions.flag(tr.session_id, before?.worst ?? "ok", tr.verdict, flagged, now);
  const plan = opts.plan({ tree: await t.treeModes.get(row.root_id), pluginSeenAt: row.plugin_seen_at }, tr);
  await t.treeModes.set({ ...plan.state, rootId: row.root_id }, now);
  await modes.applyEffects(plan.effects, plan.directives, now);
  // An older transition arriving late (a retry queue flush) joins the history
  // and the counts but does not overwrite a newer verdict.
  if (takesVerdict(row.verdict_at, tr.at)) {
    await t.sessions.setVerdict({
      session_id: tr.session_id,
      verdict: tr.verdict,
      reason: tr.reason,
      report: tr.report.length > 0 ? tr.report : null,
      at: tr.at,
      top_target: tr.top_target,
      top_target_count: tr.top_target_count,
      source: tr.source,
      stage: plan.stage,
      cannot_act: plan.cannotAct,
    });
  }
  await t.sessions.setStats({
    session_id: tr.session_id,
    turns: tr.signals.turns_since_landed,
    usd: tr.signals.usd_since_landed,
    last_landed_at: tr.signals.last_landed_at,
    context_tokens: tr.signals.context_tokens,
    calls: tr.signals.calls,
    landed: tr.signals.landed,
    at: tr.at,
  });
  return plan;
}

async function applyHeartbeat(t: Tables, modes: ModesStore, h: Heartbeat, now: number): Promise<void> {
  await t.plugins.seen(h, now);
  for (const s of h.sessions) {
    await t.sessions.learn(
      {
        session_id: s.session_id,
        parent_id: s.parent_id,
        root_id: s.root_id,
        agent: s.agent,
        source: "plugin",
        verdict: s.verdict,
      },
      now,
    );
    await t.sessions.pluginSeen(s.session_id, h.plugin_version, now);
    await modes.reportedVerdict(s.session_id, s.verdict, now);
    await t.samples.insert(s.session_id, {
      at: h.at,
      turns_since_landed: s.turns_since_landed,
      last_landed_at: s.last_landed_at,
      context_tokens: s.context_tokens,
    });
    await t.sessions.setStats({
      session_id: s.session_id,
      turns: s.turns_since_landed,
      usd: s.usd_since_landed ?? null,
      last_landed_at: s.last_landed_at,
      context_tokens: s.context_tokens,
      calls: s.calls ?? null,
      landed: s.landed ?? null,
      // An older plugin sends no top target: the transition's stays.
      ...(s.top_target_count === undefined
        ? {}
        : { top: { target: s.top_target ?? null, count: s.top_target_count } }),
      at: h.at,
    });
    await t.sessions.describe({
      session_id: s.session_id,
      title: s.title ?? null,
      directory: s.directory ?? null,
      created_at: s.created_at ?? null,
    });
  }
}
