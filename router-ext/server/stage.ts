// The server's side of the mode stage machine. The machine itself is
// router-ext/modes/policy.ts (pure, per tree); this maps a stored transition
// onto it, names the session's stage for the Sessions readout, and says which
// of the returned actions this server carries out today.
import type { Config, Transition } from "../../shared/index.ts";
import {
  decideOnDetection,
  initialTreeState,
  type ModeAction,
  type ModeKnobs,
  type TreeModeState,
} from "../modes/policy.ts";

/** The session's stage as the Sessions readout shows it. */
export type SessionStage = "none" | "warned" | "compacting" | "limited" | "recovering" | "stopped";

/**
 * Actions this server executes itself: alerts, the hard-stop tree refusal, and
 * directives handed back to the reporting plugin in the /progress answer. The
 * others (refuse_session until the compaction completes, cap_context, toast)
 * are logged until the recovery work lands.
 */
export const EXECUTED_ACTIONS: ReadonlySet<ModeAction["type"]> = new Set<ModeAction["type"]>([
  "alert",
  "refuse_tree",
  "directive",
]);

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

/** Parses a stored tree state; anything unreadable starts the tree over. */
export function parseTreeState(rootId: string, json: string | null): TreeModeState {
  if (!json) return initialTreeState(rootId);
  try {
    const v = JSON.parse(json) as Partial<TreeModeState>;
    if (typeof v !== "object" || v === null || !Array.isArray(v.recoveries)) return initialTreeState(rootId);
    return { ...initialTreeState(rootId), ...v, rootId };
  } catch {
    return initialTreeState(rootId);
  }
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
