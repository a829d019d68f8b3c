// The incident report (spec section 5): built deterministically from events
// (counts, coarse targets, exit codes), never content, so it is free and cannot
// hallucinate. Shown in toasts, alert details, the admin page and the
// compaction context. Session titles are user text, so they are not used.
import type { FlagReason, Signals, Verdict } from "./types.ts";

export interface IncidentInput {
  sessionId: string;
  agent: string;
  parentId: string | null;
  verdict: Verdict;
  reason: FlagReason | null;
  signals: Signals;
  /** What the router did about it ("was stopped", "was compacted"); default: flagged. */
  action?: string;
}

const AVOID: Record<FlagReason, string> = {
  duplicates:
    "re-reading and re-running the same things, since calls repeat without edits. Give the worker the exact edit to make, and require an on-disk diff or commit before it reports done.",
  repeat_target:
    "going back to the same target over and over. Name the one change needed there, make it, and move on; if it cannot be made, report why instead of retrying.",
  in_a_row:
    "sending the same call again and again, which answers the same each time. Its answer will not change: act on it, or report what blocks it.",
  cycle:
    "going round the same few calls, which answer the same each time. Use what they already returned: make the change, or report what blocks it.",
  retrace:
    "redoing a sweep already done (the same reads and searches again, in the same order, with the same answers). Work from what the first pass returned: make the change, or report what is missing.",
  fail_streak:
    "retrying a call that keeps failing the same way. Read the error once, change the approach (different path, different command), or report the blocker.",
  whole_session:
    "repeating one call across the whole session. Its answer will not change; use the result already in context and make an edit.",
  continuations:
    "continuing on injected prompts with nothing landed. Stop and report status instead of resuming the same plan.",
  flip_flop: "editing a change back and forth. Decide on one version, run the test once, and commit it.",
  ceiling:
    "long stretches without a landed change. Break the task into a small edit that can be tested and committed now.",
  read_only_repeat: "re-reading the same sources. Summarize what is already known and answer with it.",
  read_only_failures:
    "retrying a lookup that keeps failing (a missing or deleted file?). Report that it is missing instead of searching again.",
  read_only_novelty:
    "searching without finding anything new. Answer with what has been found, or say it is not there.",
};

/** Every flag reason (the report has advice for each; the wire accepts exactly these). */
export const FLAG_REASONS = Object.keys(AVOID) as [FlagReason, ...FlagReason[]];

function money(usd: number): string {
  return `$${usd.toFixed(2)}`;
}

function tokens(n: number): string {
  if (n >= 1e6) return `${(n / 1e6).toFixed(n >= 1e7 ? 0 : 1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(n >= 1e4 ? 0 : 1)}k`;
  return String(n);
}

/** Keeps a target readable and short; targets are already coarse and redacted. */
function clip(s: string, max = 80): string {
  const ascii = s.replace(/[^\x20-\x7e]/g, "?");
  return ascii.length > max ? `${ascii.slice(0, max - 3)}...` : ascii;
}

/** The "Avoid:" line for the dominant signal; context size wins when the context is huge. */
export function avoidLine(reason: FlagReason | null, signals: Signals): string {
  if (signals.contextTokens >= 150_000 && reason !== "fail_streak" && reason !== "read_only_failures")
    return "Avoid: carrying a huge context forward. Compact, keep only the task and the last failing output, and make one change.";
  return `Avoid: ${AVOID[reason ?? "ceiling"]}`;
}

export function incidentReport(i: IncidentInput): string {
  const s = i.signals;
  const who = i.parentId ? `${i.agent}, child of ${i.parentId}` : `${i.agent}, root session`;
  const kind = i.parentId ? "A sub-agent" : "A session";
  const state =
    i.verdict === "looping" ? "is looping" : i.verdict === "stalling" ? "is stalling" : "recovered";
  const lines = [`[stallguard] ${kind} ${state}${i.action ? ` and ${i.action}` : ""}.`];
  lines.push(`  session: ${i.sessionId} (${who})`);
  const landed = s.landed === 0 ? "0 landed changes (no edit with a diff, no commit)" : `${s.landed} landed`;
  lines.push(`  ${s.calls} tool calls, ${landed}, ${s.turnsSinceLanded} turns since the last landed change`);
  const top = s.mostRepeated.filter((r) => r.count >= 2).slice(0, 3);
  if (top.length > 0)
    lines.push(
      `  most repeated: ${top.map((r) => `${r.tool} ${clip(r.target, 60)} x${r.count}`).join(", ")}`,
    );
  if (s.topSame && s.topSame.count >= 2)
    lines.push(
      `  same call, same result: ${s.topSame.tool} ${clip(s.topSame.target, 60)} x${s.topSame.count} since the last landed change`,
    );
  if (s.failStreak >= 2)
    lines.push(
      `  failing: ${s.failStreak} failures in a row${s.failTarget ? ` on ${clip(s.failTarget)}` : ""}`,
    );
  if (s.flipFlops > 0) lines.push(`  ${s.flipFlops} edits only undid or repeated an earlier edit`);
  if (s.injectedSinceLanded > 0)
    lines.push(`  ${s.injectedSinceLanded} injected continuation turns since landed`);
  const spend = [`spend since last landed change: ${money(s.usdSinceLanded)}`];
  if (s.promptTokensSinceLanded > 0) spend.push(`${tokens(s.promptTokensSinceLanded)} prompt tokens`);
  if (s.contextTokens > 0) spend.push(`context ${tokens(s.contextTokens)}`);
  lines.push(`  ${spend.join(", ")}`);
  if (i.verdict !== "ok") lines.push(avoidLine(i.reason, s));
  return lines.join("\n").slice(0, 4000);
}

/** A one-line summary for toasts and alert titles. */
export function incidentSummary(i: IncidentInput): string {
  const s = i.signals;
  const top = s.topRepeat
    ? `; top: ${s.topRepeat.tool} ${clip(s.topRepeat.target, 50)} x${s.topRepeat.count}`
    : "";
  return `${i.agent} ${i.verdict}: ${s.turnsSinceLanded} turns, ${money(s.usdSinceLanded)} since landed${top}`;
}
