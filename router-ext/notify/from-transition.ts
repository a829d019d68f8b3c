// A verdict transition as an alert, once the plan (router-ext/modes/plan.ts)
// has decided that it raises one and at which severity. Pure formatting:
// titles and summaries carry ids, the agent, the reason code and counts only;
// the incident report rides in details.
import type { Transition } from "../../shared/index.ts";
import type { Alert, Severity } from "./types.ts";

const oneLine = (s: string): string => s.replace(/\s+/g, " ").slice(0, 500);

function where(t: Transition): string {
  return t.root_id === t.session_id
    ? `session ${t.session_id}`
    : `session ${t.session_id} (tree ${t.root_id})`;
}

function counts(t: Transition): string {
  const s = t.signals;
  const parts = [`${s.turns_since_landed} turns and $${s.usd_since_landed.toFixed(2)} since a change landed`];
  // top_target_count is the top repeat's count (the wire's name for it).
  if (t.top_target_count > 1) parts.push(`top call repeated ${t.top_target_count}x`);
  if (s.fail_streak > 1) parts.push(`${s.fail_streak} failures in a row`);
  return parts.join(", ");
}

/**
 * @example
 * transitionAlert(t, { severity: "warning", state: "trigger" }) // {dedup_key: t.root_id, title: "stallguard: build is stalling", ...}
 */
export function transitionAlert(t: Transition, level: { severity: Severity; state: Alert["state"] }): Alert {
  const seen = t.source === "watchdog" ? " (watchdog)" : "";
  const what =
    t.verdict === "ok"
      ? {
          title: `stallguard: ${t.agent} recovered`,
          summary: `${t.agent} ${where(t)} is ok again (was ${t.previous})${seen}`,
        }
      : {
          title: `stallguard: ${t.agent} is ${t.verdict}`,
          summary: `${t.agent} ${where(t)} ${t.verdict}: ${t.reason ?? "no reason"}; ${counts(t)}${seen}`,
        };
  return {
    dedup_key: t.root_id,
    severity: level.severity,
    state: level.state,
    title: what.title,
    summary: oneLine(what.summary),
    details: t.report.slice(0, 8000),
    source: t.source === "watchdog" ? "watchdog" : "no-progress",
    at: t.at,
  };
}
