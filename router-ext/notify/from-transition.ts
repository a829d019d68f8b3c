// Verdict transitions to alerts. Pure. Titles and summaries carry ids, the
// agent, the reason code and counts only; the incident report rides in details.
import type { Transition } from "../../shared/index.ts";
import type { Alert, Severity } from "./types.ts";

type Verdict = Transition["verdict"];

function severityOf(v: Verdict): Severity {
  return v === "looping" ? "critical" : v === "stalling" ? "warning" : "info";
}

const oneLine = (s: string): string => s.replace(/\s+/g, " ").slice(0, 500);

function where(t: Transition): string {
  return t.root_id === t.session_id
    ? `session ${t.session_id}`
    : `session ${t.session_id} (tree ${t.root_id})`;
}

function counts(t: Transition): string {
  const s = t.signals;
  const parts = [`${s.turns_since_landed} turns and $${s.usd_since_landed.toFixed(2)} since a change landed`];
  if (t.top_target_count > 1) parts.push(`top call repeated ${t.top_target_count}x`);
  if (s.fail_streak > 1) parts.push(`${s.fail_streak} failures in a row`);
  return parts.join(", ");
}

/**
 * The alert for one verdict transition, or null when the change needs none
 * (no change, or a step down from looping to stalling: the incident stays open
 * until the session is ok again).
 *
 * @example
 * alertFromTransition(t) // ok -> stalling: {severity: "warning", state: "trigger", dedup_key: t.root_id, ...}
 */
export function alertFromTransition(t: Transition): Alert | null {
  if (t.verdict === t.previous) return null;
  const base = {
    dedup_key: t.root_id,
    details: t.report.slice(0, 8000),
    source: t.source === "watchdog" ? ("watchdog" as const) : ("no-progress" as const),
    at: t.at,
  };
  const seen = t.source === "watchdog" ? " (watchdog)" : "";
  if (t.verdict === "ok") {
    return {
      ...base,
      severity: severityOf(t.previous),
      state: "resolve",
      title: `stallguard: ${t.agent} recovered`,
      summary: oneLine(`${t.agent} ${where(t)} is ok again (was ${t.previous})${seen}`),
    };
  }
  if (t.verdict === "stalling") {
    if (t.previous !== "ok") return null;
    return {
      ...base,
      severity: "warning",
      state: "trigger",
      title: `stallguard: ${t.agent} is stalling`,
      summary: oneLine(`${t.agent} ${where(t)} stalling: ${t.reason ?? "no reason"}; ${counts(t)}${seen}`),
    };
  }
  return {
    ...base,
    severity: "critical",
    state: t.previous === "ok" ? "trigger" : "escalate",
    title: `stallguard: ${t.agent} is looping`,
    summary: oneLine(`${t.agent} ${where(t)} looping: ${t.reason ?? "no reason"}; ${counts(t)}${seen}`),
  };
}
