// Calibration output for the terminal: the table, the --json document, the
// sweep table, the audit and the margins (the HTML report: html-report.ts).
import type { ReplayResult, SweepRow, Thresholds } from "../../shared/index.ts";
import type { Audit, Figures, SetAudit } from "./audit.ts";
import type { Labels } from "./labels.ts";
import type { Edge, KnobMargin } from "./margins.ts";
import { MIN_LABELS, MIN_STEPS, type Proposal } from "./proposal.ts";
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
      proposal: opts.sweep.proposal,
      perfect: opts.sweep.perfect,
    };
  }
  if (opts.audit) doc.audit = opts.audit;
  if (opts.margins) doc.margins = opts.margins;
  return doc;
}

export function thresholdsText(t: Partial<Thresholds>): string {
  const parts = Object.entries(t).map(([k, v]) => `${k}=${v}`);
  return parts.length ? parts.join(" ") : "(current)";
}

export function sweepLine(r: SweepRow): [string, string, string, string, string] {
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
  out.push(...proposalLines(result.proposal));
  return out.join("\n");
}

const figuresText = (r: SweepRow) =>
  `loops caught ${r.loopsCaught}/${r.loops}, healthy flagged ${r.healthyFlagged}/${r.healthy}, median first flag ${r.medianCallsToDetection ?? "-"}`;

/** A moved knob's edge on the labels: the value, its offset and distance in scan steps, the runs. */
const stepEdge = (e: { value: number; steps: number; ids: string[] } | null, at: number) =>
  e ? `${edgeText(e, at, "")}, ${e.steps} step(s) away` : "none in the scanned range";

/** The proposal, why, each moved knob's margins on the labels, the warnings, the rule, and the YAML for a change. */
export function proposalLines(p: Proposal): string[] {
  const out: string[] = [];
  if (p.status === "keep" && p.row) out.push(`proposed: keep the current thresholds (${figuresText(p.row)})`);
  else if (p.status === "change" && p.row)
    out.push(`proposed: ${thresholdsText(p.row.thresholds)} (${figuresText(p.row)})`);
  else out.push("proposed: none");
  out.push(`  why: ${p.reason}`);
  for (const c of p.changes)
    out.push(
      `  ${c.knob} ${c.from} -> ${c.to} (${c.direction}): nearest false flag on the labels ${stepEdge(c.falseFlag, c.to)}; nearest missed loop ${stepEdge(c.missedLoop, c.to)}`,
    );
  if (p.notProposed)
    out.push(
      `  not proposed: ${thresholdsText(p.notProposed.row.thresholds)} (${figuresText(p.notProposed.row)}): ${p.notProposed.why}`,
    );
  out.push(...p.warnings.map((w) => `warning: ${w}`));
  out.push(
    `rule: a change is proposed only when the labels show a false alarm or a missed loop, as the nearest candidate that fixes it with every knob it moves at least ${MIN_STEPS} steps from its nearest false flag on the labels (a knob moved to flag more must have one); fewer than ${MIN_LABELS} labels of a kind is warned about`,
  );
  if (p.status === "change" && p.changes.length)
    out.push("config/config.local.yaml:", "thresholds:", ...p.changes.map((c) => `  ${c.knob}: ${c.to}`));
  return out;
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
    orDash(f.medianFromStart),
    orDash(f.maxFromStart),
  ];
}

function renderSet(a: SetAudit, details: boolean): string[] {
  const l = a.labelled;
  const head = `labelled set ${ascii(a.name)}: ${l.loop} loop, ${l.healthy} healthy, ${l.unclear} unclear loaded${a.notLoaded ? ` (${a.notLoaded} labelled session(s) not among those loaded)` : ""}`;
  const rows = [
    ["", "loops caught", "healthy flagged", "first flag median", "max", "from start median", "max"],
    figureCells("all", a.all),
    ...(a.halves ? [figureCells("half A", a.halves.A), figureCells("half B", a.halves.B)] : []),
  ];
  const out = [head, ...columns(rows).map((r) => `  ${r}`)];
  const s = a.loopStarts;
  if (s) {
    out.push(
      `  labelled loop start (notes "calls X-Y"), ${s.loops} caught loop(s): median start call ${orDash(s.medianStart)}, median first flag ${orDash(s.medianFirstFlag)}, ${s.flaggedBeforeStart} flagged before the labelled start; "from start": calls from the labelled start to the first flag`,
    );
  } else if (a.all.loopsCaught) {
    out.push(`  no loop note gives its start ("calls X-Y"): calls from the start are not measured`);
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
