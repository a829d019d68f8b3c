// What a verdict change does, per progress.mode (spec section 5), as a pure
// function of the tree's mode state. It returns actions, nothing more:
// plan.ts translates them into a plan (durable refusals and caps, directives
// for the plugin, alerts and toasts) that the store and the server carry out.
//
// Acting modes act on looping verdicts; stalling only warns (every mode warns).
// Recoveries are counted per tree and per verdict change, never per request, so a
// client retrying a refused request cannot multiply them.
import type { Mode, VerdictChange } from "../../shared/index.ts";

/**
 * A tree's recovery stage under auto_recover: 0 none yet, 1 recovering, 2
 * recovering with the context capped, 3 hard-stopped. A session's stage as the
 * admin page shows it (SessionStage, router-ext/api/schemas.ts) is derived from
 * this one by plan.ts, never stored apart from it.
 */
export type RecoveryStage = 0 | 1 | 2 | 3;

export interface TreeModeState {
  rootId: string;
  stage: RecoveryStage;
  /** When each recovery in this tree started; only those within recover_window count. */
  recoveries: number[];
  /** Stage 3: the whole tree is refused until an admin Resume. */
  hardStop: boolean;
  /** Stage 2 / auto_limit_context: the gate caps this tree's context. */
  capContext: boolean;
  /** Sessions refused while a recovery runs; lifted when the plugin says the compaction completed. */
  refusedSessions: string[];
}

/** A verdict change as a mode acts on it: the core's fields it reads, and what the store knows besides. */
export interface VerdictChangeFacts extends Pick<VerdictChange, "sessionId" | "rootId" | "verdict"> {
  /** A plugin heartbeat is fresh for this session's tree: plugin-side actions can run. */
  pluginLive: boolean;
  report: string;
}

export interface ModeKnobs {
  mode: Mode;
  recoverWindowMs: number;
  maxRecoveries: number;
  contextCap: number;
}

export type ModeAction =
  | { type: "refuse_session"; sessionId: string }
  | { type: "refuse_tree"; rootId: string }
  | { type: "cap_context"; rootId: string; cap: number }
  | { type: "directive"; directive: "compact" | "recover"; sessionId: string; rootId: string; report: string }
  | { type: "alert"; severity: "warning" | "critical" }
  | { type: "toast"; text: string };

export interface ModeDecision {
  state: TreeModeState;
  actions: ModeAction[];
  /** Set when the mode wanted a plugin-side action but no live plugin can run it. */
  cannotAct: string | null;
}

export function initialTreeState(rootId: string): TreeModeState {
  return { rootId, stage: 0, recoveries: [], hardStop: false, capContext: false, refusedSessions: [] };
}

function warn(d: VerdictChangeFacts): ModeAction[] {
  return [{ type: "alert", severity: d.verdict === "looping" ? "critical" : "warning" }];
}

/** Parses a stored tree state; anything unreadable starts the tree over. */
export function parseTreeState(rootId: string, json: string | null | undefined): TreeModeState {
  if (!json) return initialTreeState(rootId);
  try {
    const v = JSON.parse(json) as Partial<TreeModeState>;
    if (typeof v !== "object" || v === null || !Array.isArray(v.recoveries)) return initialTreeState(rootId);
    return { ...initialTreeState(rootId), ...v, rootId };
  } catch {
    return initialTreeState(rootId);
  }
}

export function decideOnVerdictChange(
  prev: TreeModeState,
  d: VerdictChangeFacts,
  k: ModeKnobs,
  now: number,
): ModeDecision {
  const state: TreeModeState = {
    ...prev,
    recoveries: prev.recoveries.filter((t) => now - t < k.recoverWindowMs),
    refusedSessions: [...prev.refusedSessions],
  };
  if (d.verdict !== "looping" || k.mode === "warn" || state.hardStop)
    return { state, actions: d.verdict === "ok" ? [] : warn(d), cannotAct: null };

  if (k.mode === "auto_compact") {
    if (!d.pluginLive) return { state, actions: warn(d), cannotAct: "auto_compact needs a live plugin" };
    return {
      state,
      actions: [
        ...warn(d),
        {
          type: "directive",
          directive: "compact",
          sessionId: d.sessionId,
          rootId: d.rootId,
          report: d.report,
        },
      ],
      cannotAct: null,
    };
  }

  if (k.mode === "auto_limit_context") {
    state.capContext = true;
    return {
      state,
      actions: [...warn(d), { type: "cap_context", rootId: d.rootId, cap: k.contextCap }],
      cannotAct: null,
    };
  }

  // auto_recover
  if (state.recoveries.length >= k.maxRecoveries) {
    state.stage = 3;
    state.hardStop = true;
    return {
      state,
      actions: [
        { type: "refuse_tree", rootId: d.rootId },
        { type: "alert", severity: "critical" },
        {
          type: "toast",
          text: `stopped: ${state.recoveries.length} recoveries in this tree within the window; waiting for an admin Resume`,
        },
      ],
      cannotAct: null,
    };
  }
  const stage: RecoveryStage = state.recoveries.length === 0 ? 1 : 2;
  state.stage = stage;
  const actions: ModeAction[] = [...warn(d), { type: "refuse_session", sessionId: d.sessionId }];
  if (!state.refusedSessions.includes(d.sessionId)) state.refusedSessions.push(d.sessionId);
  if (stage === 2) {
    state.capContext = true;
    actions.push({ type: "cap_context", rootId: d.rootId, cap: k.contextCap });
  }
  if (!d.pluginLive)
    return { state, actions, cannotAct: "auto_recover needs a live plugin to abort and compact" };
  state.recoveries.push(now);
  actions.push({
    type: "directive",
    directive: "recover",
    sessionId: d.sessionId,
    rootId: d.rootId,
    report: d.report,
  });
  return { state, actions, cannotAct: null };
}

/** The plugin reported that a recovery's compaction completed: lift the scoped refusals. */
export function recoveryCompleted(prev: TreeModeState): TreeModeState {
  return { ...prev, refusedSessions: [] };
}
