// Everything one stored verdict transition causes, decided once and purely:
// the tree's next mode state (actions.ts), the session's stage, the durable
// effects (refusals, caps, the hard stop), the directives for a live plugin,
// the alerts for the notifier and the toasts for the reporting plugin. The
// store applies state, effects and directives in the ingest transaction; the
// server delivers alerts, toasts and log lines after the commit.
import { createHash } from "node:crypto";
import {
  type Config,
  type Directive,
  fromTransition,
  type ToastRequest,
  type Transition,
} from "../../shared/index.ts";
import type { SessionStage } from "../api/schemas.ts";
import { transitionAlert } from "../notify/from-transition.ts";
import type { Alert, Severity } from "../notify/types.ts";
import { decideOnVerdictChange, type ModeAction, type ModeKnobs, type TreeModeState } from "./actions.ts";

/** Who a mode's own refusals are recorded as (an admin's are recorded by name). */
export const MODES_ACTOR = "stallguard";

export interface PlanKnobs extends ModeKnobs {
  /** A plugin heard from within this long is live (three heartbeats). */
  liveWindowMs: number;
}

export function planKnobs(config: Config): PlanKnobs {
  return {
    mode: config.progress.mode,
    recoverWindowMs: config.progress.recover_window,
    maxRecoveries: config.progress.max_recoveries,
    contextCap: config.progress.context_cap,
    liveWindowMs: 3 * config.progress.heartbeat,
  };
}

/** What the store knows before the transition. */
export interface TransitionContext {
  /** The tree's mode state. */
  tree: TreeModeState;
  /** When a plugin last reported the session (null: never). */
  pluginSeenAt: number | null;
}

/** The durable changes, written in the transition's own transaction. */
export interface ModeEffects {
  /** Stage 3: the whole tree is refused until an admin Resume, and its open directives close. */
  hardStop: { rootId: string; reason: string } | null;
  refuseSessions: Array<{ sessionId: string; reason: string }>;
  /** A mode's own refusal of these sessions has done its job (they went ok). */
  liftSessions: Array<{ sessionId: string; reason: string }>;
  caps: Array<{ rootId: string; cap: number }>;
}

export interface TransitionPlan {
  state: TreeModeState;
  stage: SessionStage;
  /** Why the mode could not act (no live plugin), or null. */
  cannotAct: string | null;
  effects: ModeEffects;
  /** Stored until the plugin acknowledges them; handed out in /progress answers. */
  directives: Directive[];
  alerts: Alert[];
  /** For the answer to the plugin that reported the transition. */
  toasts: ToastRequest[];
  /** For the operator's log. */
  logs: string[];
}

/** The directive id for a transition: the same transition always names the same directive. */
export function directiveId(transitionId: string): string {
  return `d:${createHash("sha256").update(transitionId).digest("base64url").slice(0, 32)}`;
}

/**
 * The alert lifecycle for a verdict change: a flag triggers at the severity the
 * mode's actions asked for, looping after stalling escalates, a step down from looping
 * to stalling keeps the incident open (no alert), ok resolves it.
 */
export function alertLevel(
  t: Pick<Transition, "previous" | "verdict">,
  flagged: Severity | null,
): { severity: Severity; state: Alert["state"] } | null {
  if (t.verdict === t.previous) return null;
  if (t.verdict === "ok")
    return { severity: t.previous === "looping" ? "critical" : "warning", state: "resolve" };
  if (flagged === null) return null;
  if (t.verdict === "stalling") return t.previous === "ok" ? { severity: flagged, state: "trigger" } : null;
  return { severity: flagged, state: t.previous === "ok" ? "trigger" : "escalate" };
}

function sessionStage(
  verdict: Transition["verdict"],
  tree: TreeModeState,
  actions: ModeAction[],
): SessionStage {
  if (tree.hardStop) return "stopped";
  if (verdict === "ok") return "none";
  const acted = actions.some((a) => a.type !== "alert" && a.type !== "toast");
  if (acted && tree.stage === 2) return "limited";
  if (acted && tree.stage === 1) return "recovering";
  if (actions.some((a) => a.type === "directive" && a.directive === "compact")) return "compacting";
  if (actions.some((a) => a.type === "cap_context")) return "limited";
  return "warned";
}

/**
 * @example
 * planTransition({ tree: initialTreeState(t.root_id), pluginSeenAt: now }, t, planKnobs(config), now);
 */
export function planTransition(
  prev: TransitionContext,
  t: Transition,
  k: PlanKnobs,
  now: number,
): TransitionPlan {
  const pluginLive = prev.pluginSeenAt !== null && now - prev.pluginSeenAt <= k.liveWindowMs;
  const d = decideOnVerdictChange(prev.tree, { ...fromTransition(t), pluginLive, report: t.report }, k, now);
  const plan: TransitionPlan = {
    state: d.state,
    stage: sessionStage(t.verdict, d.state, d.actions),
    cannotAct: d.cannotAct,
    effects: { hardStop: null, refuseSessions: [], liftSessions: [], caps: [] },
    directives: [],
    alerts: [],
    toasts: [],
    logs: [],
  };
  let flagged: Severity | null = null;
  for (const a of d.actions) {
    switch (a.type) {
      case "alert":
        flagged = a.severity;
        break;
      case "refuse_session":
        plan.effects.refuseSessions.push({
          sessionId: a.sessionId,
          reason: `auto_recover stage ${d.state.stage}: recovering`,
        });
        break;
      case "cap_context":
        plan.effects.caps.push({ rootId: a.rootId, cap: a.cap });
        break;
      case "refuse_tree":
        plan.effects.hardStop = {
          rootId: a.rootId,
          reason: `max_recoveries (${k.maxRecoveries}) reached within recover_window`,
        };
        plan.logs.push(`tree ${a.rootId}: hard stop (max_recoveries); waiting for an admin Resume`);
        break;
      case "directive":
        plan.directives.push({
          id: directiveId(t.id),
          action: a.directive,
          session_id: a.sessionId,
          root_id: a.rootId,
          report: a.report.slice(0, 4000),
        });
        break;
      case "toast":
        // Only a plugin's report has an answer to carry it; the watchdog's has no one to show it to.
        if (t.source === "plugin")
          plan.toasts.push({
            session_id: t.session_id,
            title: "stallguard: tree stopped",
            message: `session ${t.session_id} (tree ${t.root_id}): ${a.text}`.slice(0, 500),
            variant: "error",
          });
        else plan.logs.push(`tree ${t.root_id}: ${a.text} (no plugin to show it: reported by the watchdog)`);
        break;
    }
  }
  if (t.verdict === "ok") plan.effects.liftSessions.push({ sessionId: t.session_id, reason: "session ok" });
  const level = alertLevel(t, flagged);
  if (level) plan.alerts.push(transitionAlert(t, level));
  return plan;
}
