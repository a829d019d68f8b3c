// The calibrate HTML report: self-contained (inline SVG, no external assets),
// ASCII only (anything else in the data becomes a character reference). The
// timelines are drawn by router-ext/timeline/draw.ts, the admin page's drawing.
import type { ReplayResult, SweepRow, TimelineTick, Verdict } from "../../shared/index.ts";
import {
  VERDICT_COLORS as COLORS,
  drawTimeline,
  type TimelineModel,
  timelineModel,
} from "../timeline/draw.ts";
import { escapeMarkup, toSvgText } from "../timeline/svg.ts";
import type { Labels } from "./labels.ts";
import { proposalLines, sweepLine, thresholdsText, topTargetText } from "./render.ts";
import type { SweepResult } from "./sweep.ts";

/** HTML-escapes and turns every non-ASCII character into a character reference. */
export const html = escapeMarkup;

export interface Band {
  from: number;
  to: number;
  verdict: Verdict;
}

/** Runs of one verdict over the timeline, by 1-based call index (inclusive). */
export function bandsOf(timeline: readonly TimelineTick[]): Band[] {
  const bands: Band[] = [];
  for (const t of timeline) {
    const last = bands[bands.length - 1];
    if (last && last.verdict === t.verdict) last.to = t.call;
    else bands.push({ from: t.call, to: t.call, verdict: t.verdict });
  }
  return bands;
}

/** A replayed session on the call axis: call n spans [n - 1, n]. */
export function replayTimeline(r: ReplayResult): TimelineModel {
  const m = timelineModel(`timeline of ${r.id}`, 0, Math.max(r.calls, 1));
  m.bands = bandsOf(r.timeline).map((b) => ({
    from: b.from - 1,
    to: b.to,
    verdict: b.verdict,
    title: `calls ${b.from}-${b.to}: ${b.verdict}`,
  }));
  m.ticks = r.timeline.map((t) => ({ at: t.call - 0.5, failed: t.failed }));
  m.marks = r.timeline
    .filter((t) => t.landed)
    .map((t) => ({ at: t.call - 0.5, kind: "landed" as const, title: `call ${t.call} landed` }));
  m.flag =
    r.first_flag_call === null
      ? null
      : { at: r.first_flag_call - 0.5, title: `first flag at call ${r.first_flag_call}` };
  return m;
}

/**
 * One session's timeline: verdict bands along the top, a tick per call (dark
 * red when it failed), a green mark under each landed change, and a dashed
 * line at the first flag.
 */
export function timelineSvg(r: ReplayResult, width = 900): string {
  return toSvgText(drawTimeline(replayTimeline(r), width));
}

export interface HtmlReportOptions {
  title?: string;
  labels?: Labels;
  sweep?: SweepResult | null;
  sources?: string[];
  generatedAt?: Date;
}

function sweepHtml(s: SweepResult): string {
  const row = (r: SweepRow, cls = "") =>
    `<tr${cls ? ` class="${cls}"` : ""}>${sweepLine(r)
      .map((c) => `<td>${html(c)}</td>`)
      .join("")}</tr>`;
  const proposedKey =
    s.proposal.status === "change" && s.proposed ? thresholdsText(s.proposed.thresholds) : null;
  const body = [
    row({ ...s.current, thresholds: {} }, s.proposal.status === "keep" ? "current proposed" : "current"),
    ...s.perfect
      .slice(0, 20)
      .map((r) => row(r, thresholdsText(r.thresholds) === proposedKey ? "proposed" : "")),
  ].join("");
  // The same words as the text report: the proposal, why, the margins, the warnings and the rule.
  const proposed = `<pre>${html(proposalLines(s.proposal).join("\n"))}</pre>`;
  return `<h2>Threshold sweep</h2>
<p>${s.candidates} candidates; ${s.perfect.length} catch every labelled loop and flag no healthy session. First row: the current thresholds.</p>
<table><thead><tr><th>thresholds</th><th>loops caught</th><th>healthy flagged</th><th>median first flag</th><th>max first flag</th></tr></thead><tbody>${body}</tbody></table>
${proposed}`;
}

/** The self-contained report: summary table, a timeline per session, and the sweep when labels were given. */
export function renderHtml(results: readonly ReplayResult[], opts: HtmlReportOptions = {}): string {
  const labels = opts.labels ?? {};
  const title = opts.title ?? "stallguard calibration";
  const rows = results
    .map(
      (r) =>
        `<tr class="${r.worst}"><td><a href="#s-${html(r.id)}">${html(r.id)}</a></td><td>${html(r.agent)}</td><td>${html(labels[r.id] ?? "-")}</td><td>${r.calls}</td><td>${r.landed}</td><td>${r.dup_share.toFixed(2)}</td><td>${r.verdict}</td><td>${r.worst}</td><td>${r.first_flag_call ?? "-"}</td><td>${r.compactions}</td><td>${r.max_context_tokens}</td><td>${html(topTargetText(r))}</td></tr>`,
    )
    .join("\n");
  const sections = results
    .map(
      (r) => `<section id="s-${html(r.id)}">
<h3>${html(r.id)} <small>${html(r.agent)}${r.parent_id ? `, child of ${html(r.parent_id)}` : ""}${labels[r.id] ? `, labelled ${html(labels[r.id] as string)}` : ""}</small></h3>
<p>${r.calls} calls, ${r.landed} landed, worst <b class="${r.worst}">${r.worst}</b>${r.first_flag_call === null ? "" : ` from call ${r.first_flag_call}${r.reason ? ` (${html(r.reason)})` : ""}`}; top target ${html(topTargetText(r))}</p>
${timelineSvg(r)}
</section>`,
    )
    .join("\n");
  const when = (opts.generatedAt ?? new Date()).toISOString();
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${html(title)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:left}
tr.stalling td:nth-child(8),b.stalling{background:${COLORS.stalling}}
tr.looping td:nth-child(8),b.looping{background:${COLORS.looping}}
tr.proposed{font-weight:bold;background:#e3f2fd}tr.current{color:#555}
section{margin:1em 0}h3{margin:.2em 0}small{color:#666;font-weight:normal}
.legend span{display:inline-block;padding:0 6px;margin-right:6px}
</style>
</head>
<body>
<h1>${html(title)}</h1>
<p>Generated ${html(when)}${opts.sources?.length ? ` from ${html(opts.sources.join(", "))}` : ""}. ${results.length} sessions.</p>
<p class="legend"><span style="background:${COLORS.ok}">ok</span><span style="background:${COLORS.stalling}">stalling</span><span style="background:${COLORS.looping}">looping</span> ticks: tool calls (dark red: failed); green marks: landed changes; dashed line: first flag.</p>
<table><thead><tr><th>session</th><th>agent</th><th>label</th><th>calls</th><th>landed</th><th>dup</th><th>verdict</th><th>worst</th><th>first flag</th><th>compactions</th><th>max ctx</th><th>top target x count</th></tr></thead>
<tbody>
${rows}
</tbody></table>
${opts.sweep ? sweepHtml(opts.sweep) : ""}
<h2>Timelines</h2>
${sections}
</body>
</html>
`;
}
