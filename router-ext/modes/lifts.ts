// What lifts a refusal, decided on values the store gathered (no database
// here): a mode's own refusal of a session goes when the session goes ok (a
// transition or a heartbeat) or its recovery's directive reports success; a
// false alarm on a flagged session lifts every refusal in its tree, whoever
// set it, and the tree's mode state starts over. An admin's refusal of a
// session stays until an admin lifts it (Resume, or a false-alarm mark).

import type { Verdict } from "../../shared/index.ts";
import type { RefusalState } from "../api/schemas.ts";
import { MODES_ACTOR } from "./plan.ts";

/** A stored refusal as the rules read it. */
export interface RefusalFact {
  state: RefusalState;
  changed_by: string;
}

/** Whether a mode (not an admin) set this refusal and it still holds. */
export function byMode(r: RefusalFact | undefined): boolean {
  return r?.state === "stopped" && r.changed_by === MODES_ACTOR;
}

/** A session reported ok (a heartbeat's figure, a transition to ok): the mode's refusal of it has done its job. */
export function okLifts(verdict: Verdict, refusal: RefusalFact | undefined): boolean {
  return verdict === "ok" && byMode(refusal);
}

/**
 * A recovery's directive answered: on success, every candidate (the mode's
 * refusals in the directive's tree, and the directive's own session) that a
 * mode refused is lifted; on failure nothing is (nothing more is spent until
 * the session lands, goes ok or is resumed). Each key once, in order.
 */
export function directiveResultLifts(
  ok: boolean,
  candidates: ReadonlyArray<{ key: string; refusal: RefusalFact | undefined }>,
): string[] {
  if (!ok) return [];
  return [...new Set(candidates.filter((c) => byMode(c.refusal)).map((c) => c.key))];
}

/** What a mark on a session lifts, and what the answer says. */
export interface MarkLifts {
  /** The session was flagged (now or before). */
  flagged: boolean;
  /** Lift the tree's own refusal. */
  tree: boolean;
  /** Sessions of the tree refused on their own, to lift. */
  sessions: string[];
  /** The tree's mode state, caps, open directives and mode refusals start over (as an admin Resume does). */
  resumeTree: boolean;
  /** What was lifted, as the answer names it ("tree r", "session s"). */
  lifted: string[];
}

/**
 * A false alarm on a flagged session lifts every refusal in its tree, the way
 * Resume does; on a session never flagged, or a confirmed loop, nothing.
 */
export function markLifts(
  kind: "false_alarm" | "confirmed_loop",
  session: { worst: Verdict; flags: number; root_id: string },
  tree: RefusalFact | undefined,
  stoppedSessions: readonly string[],
): MarkLifts {
  const flagged = session.worst !== "ok" || session.flags > 0;
  if (kind !== "false_alarm" || !flagged)
    return { flagged, tree: false, sessions: [], resumeTree: false, lifted: [] };
  const liftTree = tree?.state === "stopped";
  const sessions = [...stoppedSessions];
  return {
    flagged,
    tree: liftTree,
    sessions,
    resumeTree: true,
    lifted: [...(liftTree ? [`tree ${session.root_id}`] : []), ...sessions.map((k) => `session ${k}`)],
  };
}
