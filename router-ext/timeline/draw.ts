// The one timeline drawing, for the calibrate HTML report (axis: tool calls)
// and the admin page's session page (axis: time): verdict bands along the top,
// refusal spans under them, a tick per call or request (dark red when it failed
// or was refused), marks for landed changes, recoveries and an admin's mark,
// a dashed line at the first flag, then one small line chart per series.
// Pure: a model in, SVG as data out (./svg.ts).
import type { Verdict } from "../../shared/types.ts";
import { el, SVG_NS, type SvgNode } from "./svg.ts";

export interface TimelineBand {
  from: number;
  to: number;
  verdict: Verdict;
  title: string;
}

export type TimelineMarkKind = "landed" | "recovery" | "mark";

export interface TimelineModel {
  /** The axis, in the model's unit (a call index or epoch milliseconds). */
  from: number;
  to: number;
  /** What the drawing is of (its accessible name). */
  label: string;
  bands: TimelineBand[];
  /** A refusal: the gate refused the session or its tree from `from` to `to`. */
  spans: Array<{ from: number; to: number; title: string }>;
  ticks: Array<{ at: number; failed: boolean }>;
  marks: Array<{ at: number; kind: TimelineMarkKind; title: string }>;
  flag: { at: number; title: string } | null;
  /** Line charts under the strip, on the same axis (turns and $ since landed over time). */
  series: Array<{ label: string; points: Array<[number, number]>; format: (v: number) => string }>;
  /** Axis labels under everything (times on the session page). */
  axis: Array<{ at: number; text: string }>;
}

export const VERDICT_COLORS: Record<Verdict, string> = {
  ok: "#d9f2d9",
  stalling: "#ffd27f",
  looping: "#ff8a80",
};
const MARK_FILL: Record<TimelineMarkKind, string> = {
  landed: "#1b873f",
  recovery: "#1f6feb",
  mark: "#8250df",
};
const STRIP = 48;
const CHART = 52;
const AXIS = 14;

/** An empty model over [from, to]. */
export function timelineModel(label: string, from: number, to: number): TimelineModel {
  return { from, to, label, bands: [], spans: [], ticks: [], marks: [], flag: null, series: [], axis: [] };
}

function markPath(kind: TimelineMarkKind, x: string): string {
  if (kind === "landed") return `M${x} 36l-3 6h6z`;
  if (kind === "recovery") return `M${x} 35l3 4l-3 4l-3 -4z`;
  // A flag on a pole from the tick row down: easy to find on a long axis.
  return `M${x} 18v26h1.2v-26zM${x} 18h8l-2.5 3l2.5 3h-8z`;
}

function chart(
  s: TimelineModel["series"][number],
  xOf: (v: number) => number,
  top: number,
  width: number,
  endX: number,
): SvgNode {
  const max = Math.max(0, ...s.points.map((p) => p[1]));
  const h = CHART - 16;
  const y = (v: number) => (top + 12 + h - (max > 0 ? (v / max) * h : 0)).toFixed(1);
  // A step line: the value holds until the next point.
  let d = "";
  s.points.forEach(([at, v], i) => {
    const x = xOf(at).toFixed(1);
    d += i === 0 ? `M${x} ${y(v)}` : `H${x}V${y(v)}`;
  });
  if (d) d += `H${endX.toFixed(1)}`;
  return el("g", { "data-series": s.label }, [
    el(
      "text",
      { x: 4, y: top + 9, "font-size": 10, fill: "#57606a" },
      [],
      `${s.label} (max ${s.format(max)})`,
    ),
    el("path", { d: `M4 ${top + 12 + h}H${width - 4}`, stroke: "#d0d7de", "stroke-width": 1 }),
    d ? el("path", { d, fill: "none", stroke: "#0969da", "stroke-width": 1.5 }) : el("g", {}),
  ]);
}

/** Where a value sits on the axis, in pixels (xOf) and as SVG text (x). */
interface Axis {
  xOf: (v: number) => number;
  x: (v: number) => string;
}

/** Verdict bands along the top, refusal spans under them. */
function bandNodes(m: TimelineModel, { xOf, x }: Axis): SvgNode[] {
  const nodes: SvgNode[] = [];
  for (const b of m.bands)
    nodes.push(
      el(
        "rect",
        {
          x: x(b.from),
          y: 2,
          width: Math.max(xOf(b.to) - xOf(b.from), 0.5).toFixed(1),
          height: 12,
          fill: VERDICT_COLORS[b.verdict],
        },
        [el("title", {}, [], b.title)],
      ),
    );
  for (const s of m.spans)
    nodes.push(
      el("path", { d: `M${x(s.from)} 16.5H${x(s.to)}`, stroke: "#a40e26", "stroke-width": 3 }, [
        el("title", {}, [], s.title),
      ]),
    );
  return nodes;
}

/** One tick per call or request, the failed ones in a path of their own. */
function tickNodes(m: TimelineModel, { x }: Axis): SvgNode[] {
  let ticks = "";
  let failed = "";
  for (const t of m.ticks) {
    if (t.failed) failed += `M${x(t.at)} 18V34`;
    else ticks += `M${x(t.at)} 18V34`;
  }
  const nodes: SvgNode[] = [];
  if (ticks) nodes.push(el("path", { d: ticks, stroke: "#607d8b", "stroke-width": 1 }));
  if (failed) nodes.push(el("path", { d: failed, stroke: "#8b0000", "stroke-width": 1.5 }));
  return nodes;
}

/** Landed changes, recoveries, an admin's mark, and the dashed line at the first flag. */
function markNodes(m: TimelineModel, { x }: Axis): SvgNode[] {
  const nodes: SvgNode[] = [];
  const landed = m.marks.filter((k) => k.kind === "landed");
  // Landed marks in one path (there can be hundreds); the others, few, each with a title.
  if (landed.length)
    nodes.push(
      el("path", { d: landed.map((k) => markPath("landed", x(k.at))).join(""), fill: MARK_FILL.landed }),
    );
  for (const k of m.marks.filter((k) => k.kind !== "landed"))
    nodes.push(
      el("path", { d: markPath(k.kind, x(k.at)), fill: MARK_FILL[k.kind], "data-mark": k.kind }, [
        el("title", {}, [], k.title),
      ]),
    );
  if (m.flag)
    nodes.push(
      el(
        "path",
        {
          d: `M${x(m.flag.at)} 0V46`,
          stroke: "#b00020",
          "stroke-width": 1.5,
          "stroke-dasharray": "3 2",
        },
        [el("title", {}, [], m.flag.title)],
      ),
    );
  return nodes;
}

/** The axis labels at `top`, kept inside the drawing at both ends. */
function axisNodes(m: TimelineModel, { xOf }: Axis, top: number, width: number): SvgNode[] {
  return m.axis.map((a) => {
    const ax = xOf(a.at);
    const anchor = ax < 40 ? "start" : ax > width - 40 ? "end" : "middle";
    return el(
      "text",
      { x: ax.toFixed(1), y: top + 10, "font-size": 10, fill: "#57606a", "text-anchor": anchor },
      [],
      a.text,
    );
  });
}

/** The model drawn `width` pixels wide. */
export function drawTimeline(m: TimelineModel, width = 900): SvgNode {
  const left = 4;
  const inner = width - 2 * left;
  const span = Math.max(m.to - m.from, 1e-9);
  const xOf = (v: number) => left + ((Math.min(Math.max(v, m.from), m.to) - m.from) / span) * inner;
  const axis: Axis = { xOf, x: (v) => xOf(v).toFixed(1) };
  const charts = m.series.map((s, i) => chart(s, xOf, STRIP + i * CHART, width, xOf(m.to)));
  const axisTop = STRIP + m.series.length * CHART;
  const nodes = [
    ...bandNodes(m, axis),
    ...tickNodes(m, axis),
    ...markNodes(m, axis),
    ...charts,
    ...axisNodes(m, axis, axisTop, width),
  ];
  const height = axisTop + (m.axis.length ? AXIS : 0);
  return el(
    "svg",
    { xmlns: SVG_NS, width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": m.label },
    nodes,
  );
}
