// Warn mode on its own: the toast shown in opencode when a session starts
// stalling or looping. Built from the core's summary (agent, turns and $
// since landed, top repeated target); no content, so it works whether or not
// the router extension is up.
import { incidentSummary, VERDICT_RANK, type VerdictChange } from "../shared/index.ts";

export interface Toast {
  title: string;
  message: string;
  variant: "info" | "success" | "warning" | "error";
  duration: number;
}

/** The toast for a transition, or null: only a move up to stalling or looping is shown. */
export function toastFor(c: VerdictChange): Toast | null {
  if (c.verdict === "ok" || VERDICT_RANK[c.verdict] <= VERDICT_RANK[c.previous]) return null;
  const summary = incidentSummary(c);
  const where = c.parentId ? `sub-agent of ${c.rootId}` : "root session";
  return {
    title: `stallguard: ${c.verdict}`,
    message: `session ${c.sessionId} (${where}): ${summary}`.slice(0, 500),
    variant: c.verdict === "looping" ? "error" : "warning",
    duration: c.verdict === "looping" ? 15_000 : 8000,
  };
}
