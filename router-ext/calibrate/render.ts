// Calibration output: the terminal table, the --json document, the sweep
// table and the self-contained HTML report (inline SVG, no external assets,
// ASCII only: anything else in the data becomes an HTML character reference).
import type { ReplayResult, SweepRow, Thresholds, TimelineTick, Verdict } from "../../shared/index.ts";
import type { Audit, Figures, SetAudit } from "./audit.ts";
import type { Labels } from "./labels.ts";
import type { Edge, KnobMargin } from "./margins.ts";
import type { SweepResult } from "./sweep.ts";

/** Printable ASCII for the terminal: other characters become "?". */
export function ascii(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, "?");
}

function cut(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

function pad(text: string, width: number, right = false): string {
  return right ? text.padStart(width) : text.padEnd(width);
}

export function topTargetText(r: Pick<ReplayResult, "top_target" | "top_target_count">): string {
  return r.top_target ? `${r.top_target} x${r.top_target_count}` : "-";
}

/** The terminal table: one line per session. */
export function renderTable(results: readonly ReplayResult[], labels: Labels = {}): string {
  const hasLabels = results.some((r) => labels[r.id]);
  const head = [
    "session",
    "agent",
    ...(hasLabels ? ["label"] : []),
    "calls",
    "landed",
    "dup",
    "verdict",
    "worst",
    "first flag",
    "cmp",
    "max ctx",
    "top target x count",
  ];
  const right = new Set(["calls", "landed", "dup", "first flag", "cmp", "max ctx"]);
  const rows = results.map((r) => [
    ascii(r.id),
    ascii(cut(r.agent, 20)),
    ...(hasLabels ? [labels[r.id] ?? "-"] : []),
    String(r.calls),
    String(r.landed),
    r.dup_share.toFixed(2),
    r.verdict,
    r.worst,
    r.first_flag_call === null ? "-" : String(r.first_flag_call),
    String(r.compactions),
    String(r.max_context_tokens),
    ascii(cut(topTargetText(r), 60)),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : pad(c, widths[i] as number, right.has(head[i] as string))))
      .join("  ")
      .trimEnd();
  return [line(head), ...rows.map(line)].join("\n");
}

/** One line under the table: how many sessions were flagged. */
export function renderSummary(results: readonly ReplayResult[]): string {
  const flagged = results.filter((r) => r.worst !== "ok").length;
  const calls = results.reduce((n, r) => n + r.calls, 0);
  return `${results.length} session(s), ${calls} tool call(s), ${flagged} flagged`;
}

/**
 * The --json document: {"sessions": [replay result per session]}, field names
 * exactly as shared/replay.ts returns them. The timeline is included only
 * when asked for (it has one entry per tool call).
 */
export function toJsonDoc(
  results: readonly ReplayResult[],
  opts: {
    timeline?: boolean;
    sweep?: SweepResult | null;
    labels?: Labels;
    audit?: Audit | null;
    margins?: KnobMargin[] | null;
  } = {},
): Record<string, unknown> {
  const sessions = results.map((r) => {
    if (opts.timeline) return r;
    const { timeline: _timeline, ...rest } = r;
    return rest;
  });
  const doc: Record<string, unknown> = { sessions };
  if (opts.sweep) {
    doc.sweep = {
      candidates: opts.sweep.candidates,
      current: opts.sweep.current,
      proposed: opts.sweep.proposed,
      perfect: opts.sweep.perfect,
    };
  }
  if (opts.audit) doc.audit = opts.audit;
  if (opts.margins) doc.margins = opts.margins;
  return doc;
}

function thresholdsText(t: Partial<Thresholds>): string {
  const parts = Object.entries(t).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(" ") : "(current)";
}

function sweepLine(r: SweepRow): [string, string, string, string, string] {
  return [
    thresholdsText(r.thresholds),
    `${r.loopsCaught}/${r.loops}`,
    `${r.healthyFlagged}/${r.healthy}`,
    r.medianCallsToDetection === null ? "-" : String(r.medianCallsToDetection),
    r.maxCallsToDetection === null ? "-" : String(r.maxCallsToDetection),
  ];
}

/** The proposed threshold table: the candidates that catch every loop and flag nothing healthy. */
export function renderSweep(result: SweepResult, top = 10): string {
  const head = ["thresholds", "loops caught", "healthy flagged", "median first flag", "max first flag"];
  const shown = result.perfect.slice(0, top);
  const rows = [sweepLine({ ...result.current, thresholds: {} }), ...shown.map(sweepLine)];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] as string).length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => pad(c, widths[i] as number, i > 0))
      .join("  ")
      .trimEnd();
  const out = [
    `sweep: ${result.candidates} candidate(s), ${result.perfect.length} catch every labelled loop and flag no healthy session (${Math.round(result.ms)} ms)`,
    line(head),
    line(rows[0] as string[]),
    ...rows.slice(1).map((r) => line(r)),
  ];
  if (result.perfect.length > top) out.push(`... ${result.perfect.length - top} more`);
  const p = result.proposed;
  if (!p) {
    out.push("proposed: none (every candidate flags a healthy session)");
  } else {
    out.push(
      `proposed: ${thresholdsText(p.thresholds)} (loops caught ${p.loopsCaught}/${p.loops}, healthy flagged ${p.healthyFlagged}/${p.healthy}, median first flag ${p.medianCallsToDetection ?? "-"})`,
    );
    const keys = Object.entries(p.thresholds);
    if (keys.length)
      out.push("config/config.local.yaml:", "thresholds:", ...keys.map(([k, v]) => `  ${k}: ${v}`));
  }
  return out.join("\n");
}

// ---------------------------------------------------------------------------
// Audit and margins

/** Aligned columns two spaces apart; numbers (every column but the first) right-aligned unless `left`. */
function columns(rows: readonly string[][], left = false): string[] {
  const widths: number[] = [];
  for (const r of rows) for (const [i, c] of r.entries()) widths[i] = Math.max(widths[i] ?? 0, c.length);
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 && left ? c : pad(c, widths[i] as number, !left && i > 0)))
      .join("  ")
      .trimEnd(),
  );
}

const orDash = (v: number | null) => (v === null ? "-" : String(v));

function figureCells(name: string, f: Figures): string[] {
  return [
    name,
    `${f.loopsCaught}/${f.loops}`,
    `${f.healthyFlagged}/${f.healthy}`,
    orDash(f.medianFirstFlag),
    orDash(f.maxFirstFlag),
  ];
}

function renderSet(a: SetAudit, details: boolean): string[] {
  const l = a.labelled;
  const head = `labelled set ${ascii(a.name)}: ${l.loop} loop, ${l.healthy} healthy, ${l.unclear} unclear loaded${a.notLoaded ? ` (${a.notLoaded} labelled session(s) not among those loaded)` : ""}`;
  const rows = [
    ["", "loops caught", "healthy flagged", "first flag median", "max"],
    figureCells("all", a.all),
    ...(a.halves ? [figureCells("half A", a.halves.A), figureCells("half B", a.halves.B)] : []),
  ];
  const out = [head, ...columns(rows).map((r) => `  ${r}`)];
  const s = a.loopStarts;
  if (s) {
    out.push(
      `  labelled loop start (notes "calls X-Y"), ${s.loops} caught loop(s): median start call ${orDash(s.medianStart)}, median first flag ${orDash(s.medianFirstFlag)}, ${s.flaggedBeforeStart} flagged before the labelled start`,
    );
  }
  if (!details) return out;
  const half = (h: string) => (a.halves ? ` [half ${h}]` : "");
  out.push(`  false flags (healthy runs flagged): ${a.falseFlags.length ? "" : "none"}`.trimEnd());
  for (const f of a.falseFlags)
    out.push(`    ${ascii(f.id)}${half(f.half)} at call ${orDash(f.call)}, ${f.verdict}: ${ascii(f.why)}`);
  out.push(`  loops missed: ${a.missed.length ? "" : "none"}`.trimEnd());
  for (const m of a.missed) out.push(`    ${ascii(m.id)}${half(m.half)}, ${m.calls} calls: ${ascii(m.why)}`);
  return out;
}

/** Per labelled set: the figures (and both halves with --split), then every false flag and missed loop. */
export function renderAudit(a: Audit): string {
  const out: string[] = [];
  if (a.split) out.push("split: half A = first byte of sha256(session id) even, half B = odd");
  const many = a.sets.length > 1;
  a.sets.forEach((set, i) => {
    // The combined set comes last; its false flags and misses are listed under their own sets.
    out.push(...renderSet(set, !(many && i === a.sets.length - 1)));
  });
  return out.join("\n");
}

function edgeText(e: Edge | null, current: number, none: string): string {
  if (!e) return none;
  const d = Math.round((e.value - current) * 1e6) / 1e6;
  const shown = e.ids.slice(0, 2).map(ascii).join(", ");
  const more = e.ids.length > 2 ? `, +${e.ids.length - 2} more` : "";
  return `${e.value} (${d > 0 ? "+" : ""}${d === 0 ? "current" : d}): ${shown}${more}`;
}

/** The margins table: per knob, the safe run around the current value and what lies just past each end. */
export function renderMargins(
  list: readonly KnobMargin[],
  meta: { loops: number; healthy: number; trees: number; ms: number },
): string {
  const runs = list.reduce((n, m) => n + m.treeRuns, 0);
  const rows = list.map((m) => {
    const lo = m.range.flagsMore === "lower";
    if (m.off) return [m.knob, String(m.current), "off", "-", "-"];
    return [
      m.knob,
      String(m.current),
      m.safe ? `${m.safe.from}..${m.safe.to}` : "-",
      edgeText(m.falseFlag, m.current, `none ${lo ? "down to" : "up to"} ${lo ? m.range.min : m.range.max}`),
      edgeText(m.missedLoop, m.current, `none ${lo ? "up to" : "down to"} ${lo ? m.range.max : m.range.min}`),
    ];
  });
  return [
    `margins: one knob at a time, the others at their current values, over ${meta.loops} labelled loop(s) and ${meta.healthy} healthy run(s); steps of 1 (counts), 0.05 (shares), $0.25 (dollars); ${runs} tree replays (${(runs / Math.max(meta.trees, 1)).toFixed(0)} full-corpus equivalents) in ${(meta.ms / 1000).toFixed(1)} s`,
    "safe range: the values around the current one that flag no healthy run and catch every loop",
    ...columns(
      [["knob", "current", "safe range", "nearest false flag", "nearest missed loop"], ...rows],
      true,
    ),
  ].join("\n");
}

// ---------------------------------------------------------------------------
// HTML

/** HTML-escapes and turns every non-ASCII character into a character reference. */
export function html(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;")
    .replace(/[^\x20-\x7e\n]/gu, (c) => `&#x${(c.codePointAt(0) as number).toString(16)};`);
}

const COLORS: Record<Verdict, string> = { ok: "#d9f2d9", stalling: "#ffd27f", looping: "#ff8a80" };

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

/**
 * One session's timeline: verdict bands along the top, a tick per call (dark
 * red when it failed), a green mark under each landed change, and a dashed
 * line at the first flag.
 */
export function timelineSvg(r: ReplayResult, width = 900): string {
  const n = Math.max(r.calls, 1);
  const left = 4;
  const inner = width - 2 * left;
  const x = (call: number) => (left + ((call - 0.5) / n) * inner).toFixed(1);
  const bandW = (b: Band) => (((b.to - b.from + 1) / n) * inner).toFixed(1);
  const bands = bandsOf(r.timeline)
    .map(
      (b) =>
        `<rect x="${(left + ((b.from - 1) / n) * inner).toFixed(1)}" y="2" width="${bandW(b)}" height="12" fill="${COLORS[b.verdict]}"><title>calls ${b.from}-${b.to}: ${b.verdict}</title></rect>`,
    )
    .join("");
  let ticks = "";
  let failed = "";
  let landed = "";
  for (const t of r.timeline) {
    if (t.failed) failed += `M${x(t.call)} 18V34`;
    else ticks += `M${x(t.call)} 18V34`;
    if (t.landed) landed += `M${x(t.call)} 36l-3 6h6z`;
  }
  const flag =
    r.first_flag_call === null
      ? ""
      : `<path d="M${x(r.first_flag_call)} 0V46" stroke="#b00020" stroke-width="1.5" stroke-dasharray="3 2"><title>first flag at call ${r.first_flag_call}</title></path>`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="48" viewBox="0 0 ${width} 48" role="img" aria-label="timeline of ${html(r.id)}">`,
    bands,
    ticks ? `<path d="${ticks}" stroke="#607d8b" stroke-width="1"/>` : "",
    failed ? `<path d="${failed}" stroke="#8b0000" stroke-width="1.5"/>` : "",
    landed ? `<path d="${landed}" fill="#1b873f"/>` : "",
    flag,
    "</svg>",
  ].join("");
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
  const proposedKey = s.proposed ? thresholdsText(s.proposed.thresholds) : null;
  const body = [
    row({ ...s.current, thresholds: {} }, "current"),
    ...s.perfect
      .slice(0, 20)
      .map((r) => row(r, thresholdsText(r.thresholds) === proposedKey ? "proposed" : "")),
  ].join("");
  const proposed = s.proposed
    ? `<p>Proposed: <code>${html(thresholdsText(s.proposed.thresholds))}</code> (loops caught ${s.proposed.loopsCaught}/${s.proposed.loops}, healthy flagged ${s.proposed.healthyFlagged}/${s.proposed.healthy}, median first flag ${s.proposed.medianCallsToDetection ?? "-"}).</p>`
    : "<p>Proposed: none (every candidate flags a healthy session).</p>";
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
