// The server's side of the mode stage machine. The machine itself is
// router-ext/modes/policy.ts (pure, per tree); this maps a stored transition
// onto it, names the session's stage for the Sessions readout, and says which
// of the returned actions this server carries out today.
import type { Config, Transition } from "../../shared/index.ts";
import { decideOnDetection, type ModeAction, type ModeKnobs, type TreeModeState } from "../modes/policy.ts";
import { directiveId, type ModeEffects } from "../modes/store.ts";

/** The session's stage as the Sessions readout shows it. */
export type SessionStage = "none" | "warned" | "compacting" | "limited" | "recovering" | "stopped";

/**
 * Actions this server executes itself: alerts, the hard-stop tree refusal,
 * directives handed to a live plugin in /progress answers (kept until it
 * acknowledges them), the scoped session refusal (lifted when the recovery
 * completes or the session goes ok) and the context cap (the gate answers an
 * over-cap request with a context-overflow error). Toasts are the plugin's.
 */
export const EXECUTED_ACTIONS: ReadonlySet<ModeAction["type"]> = new Set<ModeAction["type"]>([
  "alert",
  "refuse_tree",
  "directive",
  "refuse_session",
  "cap_context",
]);

/**
 * What a transition's actions change in the store, written in the same
 * transaction as the transition (so a restart keeps refusals, caps and
 * unacknowledged directives).
 */
export function effectsOf(
  actions: readonly ModeAction[],
  t: Pick<Transition, "id">,
  stage: number,
): ModeEffects {
  const e: ModeEffects = { refuseSessions: [], directives: [], caps: [], hardStops: [] };
  for (const a of actions) {
    if (a.type === "refuse_session")
      e.refuseSessions.push({ sessionId: a.sessionId, reason: `auto_recover stage ${stage}: recovering` });
    else if (a.type === "cap_context") e.caps.push({ rootId: a.rootId, cap: a.cap });
    else if (a.type === "refuse_tree") e.hardStops.push(a.rootId);
    else if (a.type === "directive")
      e.directives.push({
        id: directiveId(t.id),
        action: a.directive,
        session_id: a.sessionId,
        root_id: a.rootId,
        report: a.report.slice(0, 4000),
      });
  }
  return e;
}

export function modeKnobs(config: Config): ModeKnobs {
  return {
    mode: config.progress.mode,
    recoverWindowMs: config.progress.recover_window,
    maxRecoveries: config.progress.max_recoveries,
    contextCap: config.progress.context_cap,
  };
}

export interface StageOutcome {
  stage: SessionStage;
  actions: ModeAction[];
  treeState: TreeModeState;
  cannotAct: string | null;
}

/**
 * The stage outcome of one transition.
 *
 * @example
 * stageOf(t, { treeState: initialTreeState(t.root_id), knobs: modeKnobs(config), pluginLive: true, now });
 */
export function stageOf(
  t: Pick<Transition, "session_id" | "root_id" | "verdict" | "report">,
  ctx: { treeState: TreeModeState; knobs: ModeKnobs; pluginLive: boolean; now: number },
): StageOutcome {
  const d = decideOnDetection(
    ctx.treeState,
    {
      sessionId: t.session_id,
      rootId: t.root_id,
      verdict: t.verdict,
      pluginLive: ctx.pluginLive,
      report: t.report,
    },
    ctx.knobs,
    ctx.now,
  );
  return {
    stage: sessionStage(t.verdict, d.state, d.actions),
    actions: d.actions,
    treeState: d.state,
    cannotAct: d.cannotAct,
  };
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
