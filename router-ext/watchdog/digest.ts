// The digest a local model judges: tool names, coarse targets, exit codes and
// landed flags of a flagged session's recent calls, plus the counts the core
// computed. Never arguments, file contents or output: only what the core's
// ToolEvent already reduced a call to.
import type { Signals, ToolEvent, Verdict } from "../../shared/index.ts";

export interface DigestCall {
  tool: string;
  target: string;
  exit: number | null;
  failed: boolean;
  landed: boolean;
}

export function digestCall(e: ToolEvent): DigestCall {
  return { tool: e.tool, target: e.target, exit: e.exit, failed: e.failed, landed: e.landed };
}

export interface DigestInput {
  agent: string;
  verdict: Verdict;
  reason: string | null;
  signals: Signals;
  calls: readonly DigestCall[];
}

export const DIGEST_MAX_CALLS = 40;

/** Printable ASCII, bounded. Targets are already coarse; this only keeps the prompt tidy. */
function clean(s: string, max: number): string {
  const ascii = s.replace(/[^\x20-\x7e]/g, "?");
  return ascii.length > max ? `${ascii.slice(0, max - 3)}...` : ascii;
}

function callLine(i: number, c: DigestCall): string {
  const bits = [`${i}.`, clean(c.tool, 40)];
  if (c.target) bits.push(clean(c.target, 120));
  if (c.exit !== null) bits.push(`exit=${c.exit}`);
  else if (c.failed) bits.push("error");
  if (c.landed) bits.push("LANDED");
  return bits.join(" ");
}

export function buildDigest(d: DigestInput): string {
  const s = d.signals;
  const lines = [
    `agent: ${clean(d.agent, 64)}${s.readOnly ? " (read-only agent: never edits by design)" : ""}`,
    `deterministic verdict: ${d.verdict}${d.reason ? ` (${d.reason})` : ""}`,
    `tool calls: ${s.calls}, landed changes: ${s.landed}, turns since last landed change: ${s.turnsSinceLanded}`,
    `duplicate share in window: ${s.dupShare.toFixed(2)}, failures in a row: ${s.failStreak}`,
  ];
  const top = s.mostRepeated.filter((r) => r.count >= 2).slice(0, 3);
  if (top.length > 0)
    lines.push(
      `most repeated: ${top.map((r) => `${clean(r.tool, 40)} ${clean(r.target, 80)} x${r.count}`).join("; ")}`,
    );
  if (s.injectedSinceLanded > 0)
    lines.push(`injected continuation turns since landed: ${s.injectedSinceLanded}`);
  const recent = d.calls.slice(-DIGEST_MAX_CALLS);
  const first = d.calls.length - recent.length + 1;
  lines.push(`last ${recent.length} calls (tool target exit):`);
  recent.forEach((c, i) => {
    lines.push(callLine(first + i, c));
  });
  return lines.join("\n");
}
