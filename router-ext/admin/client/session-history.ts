// A session's history as the session page draws it, derived purely from the
// detail answer (router-ext/api/session-detail.ts): verdict bands over time,
// landed changes, the first flag, recoveries, refusals, the admin's mark,
// turns and $ since landed over time, and the mode's actions as a list.
import type { Verdict } from "../../../shared/types.ts";
import type { SessionDetail } from "../../api/session-detail.ts";
import { type TimelineModel, timelineModel } from "../../timeline/draw.ts";
import { fmtInt, fmtTime, fmtUsd } from "./format.ts";
import { markWords, wasFlagged } from "./mark-words.ts";

export interface Action {
  at: number;
  what: string;
  by: string;
  detail: string;
}

const clock = (ms: number) => fmtTime(ms).slice(11);

/** Every landed change the reports name (heartbeats and transitions), oldest first. */
export function landedTimes(d: SessionDetail): number[] {
  const all = [
    ...d.samples.map((s) => s.last_landed_at),
    ...d.transitions.map((t) => t.signals.last_landed_at),
  ].filter((x): x is number => x !== null);
  return [...new Set(all)].sort((a, b) => a - b);
}

/**
 * The time axis: the session's own activity (its transitions, heartbeat
 * samples that changed, model requests, the mode's directives), padded 2%.
 * An admin's mark, a later Stop or Resume, and heartbeats of an idle session
 * do not stretch it: they are drawn at its edge.
 */
export function timeSpan(d: SessionDetail): { from: number; to: number } {
  const times = [
    ...d.transitions.map((t) => t.at),
    ...d.samples.map((s) => s.at),
    ...d.requests.map((r) => r.at),
    ...d.directives.flatMap((x) => [x.created_at, x.done_at ?? x.created_at]),
  ];
  if (times.length === 0) times.push(d.session.last_seen_at);
  const from = Math.min(...times);
  const to = Math.max(...times);
  const pad = Math.max((to - from) * 0.02, 1000);
  return { from: from - pad, to: to + pad };
}

/** Runs of one verdict from the transitions; the first run is the first transition's previous verdict. */
export function verdictBands(
  d: SessionDetail,
  span: { from: number; to: number },
): Array<{ from: number; to: number; verdict: Verdict }> {
  const first = d.transitions[0];
  let current: Verdict = first ? first.previous : d.session.verdict;
  let start = span.from;
  const out: Array<{ from: number; to: number; verdict: Verdict }> = [];
  for (const t of d.transitions) {
    if (t.verdict === current) continue;
    if (t.at > start) out.push({ from: start, to: t.at, verdict: current });
    current = t.verdict;
    start = Math.max(start, t.at);
  }
  out.push({ from: start, to: span.to, verdict: current });
  return out;
}

/** Refused stretches from the refusal log: stopped until the next running of the same scope. */
export function refusalSpans(
  d: SessionDetail,
  end: number,
): Array<{ from: number; to: number; title: string }> {
  const open = new Map<string, { at: number; by: string; reason: string | null }>();
  const out: Array<{ from: number; to: number; title: string }> = [];
  const close = (scope: string, at: number) => {
    const o = open.get(scope);
    if (!o) return;
    open.delete(scope);
    out.push({ from: o.at, to: at, title: `${scope} refused by ${o.by}${o.reason ? ` (${o.reason})` : ""}` });
  };
  for (const r of d.refusals) {
    if (r.state === "stopped" && !open.has(r.scope))
      open.set(r.scope, { at: r.at, by: r.by, reason: r.reason });
    else if (r.state === "running") close(r.scope, r.at);
  }
  for (const scope of [...open.keys()]) close(scope, end);
  return out.sort((a, b) => a.from - b.from);
}

/**
 * Turns and $ since landed over time. With gate records: each request is a
 * turn, its cost adds up, both start over at every landed change (the readout
 * counts the same way). Without: the reporter's figures as reported.
 */
export function spendSeries(d: SessionDetail): {
  turns: Array<[number, number]>;
  usd: Array<[number, number]>;
} {
  const served = d.requests.filter((r) => !r.refused);
  if (served.length > 0) {
    const landed = landedTimes(d);
    const turns: Array<[number, number]> = [];
    const usd: Array<[number, number]> = [];
    let li = 0;
    let n = 0;
    let cost = 0;
    for (const r of served) {
      let reset = false;
      while (li < landed.length && (landed[li] as number) < r.at) {
        li++;
        reset = true;
      }
      if (reset) {
        const at = landed[li - 1] as number;
        n = 0;
        cost = 0;
        turns.push([at, 0]);
        usd.push([at, 0]);
      }
      n++;
      cost += r.cost_usd ?? 0;
      turns.push([r.at, n]);
      usd.push([r.at, Math.round(cost * 1e6) / 1e6]);
    }
    return { turns, usd };
  }
  const turns: Array<[number, number]> = [
    ...d.samples.map((s): [number, number] => [s.at, s.turns_since_landed]),
    ...d.transitions.map((t): [number, number] => [t.at, t.signals.turns_since_landed]),
  ].sort((a, b) => a[0] - b[0]);
  const usd = d.transitions.map((t): [number, number] => [t.at, t.signals.usd_since_landed]);
  return { turns, usd };
}

/** The first move from ok to stalling or looping. */
export function firstFlag(d: SessionDetail) {
  return d.transitions.find((t) => t.previous === "ok" && t.verdict !== "ok") ?? null;
}

/** What the mode (and the admins) did about the session's tree, oldest first. */
export function actionsOf(d: SessionDetail): Action[] {
  const out: Action[] = [];
  for (const x of d.directives) {
    const who = x.session_id === d.session.session_id ? "this session" : x.session_id;
    out.push({ at: x.created_at, what: `${x.action} requested`, by: "stallguard", detail: who });
    if (x.done_at !== null)
      out.push({
        at: x.done_at,
        what: x.ok ? `${x.action} done` : `${x.action} not done`,
        by: x.ok ? "plugin" : "stallguard",
        detail: x.ok ? who : (x.error ?? "failed"),
      });
  }
  for (const r of d.refusals)
    out.push({
      at: r.at,
      what: `${r.scope} ${r.state === "stopped" ? "refused" : "let through"}`,
      by: r.by,
      detail: r.reason ?? "-",
    });
  if (d.cap)
    out.push({
      at: d.cap.set_at,
      what: "context cap",
      by: "stallguard",
      detail: `${fmtInt(d.cap.cap)} tokens`,
    });
  if (d.mark)
    out.push({
      at: d.mark.at,
      what: `marked ${markWords(d.mark.kind, wasFlagged(d.session))}`,
      by: d.mark.by,
      detail: "-",
    });
  return out.sort((a, b) => a.at - b.at);
}

/** The timeline model for the session page (time axis). */
export function sessionTimeline(d: SessionDetail): TimelineModel {
  const span = timeSpan(d);
  const m = timelineModel(`history of ${d.session.session_id}`, span.from, span.to);
  m.bands = verdictBands(d, span).map((b) => ({
    ...b,
    title: `${b.verdict} ${clock(b.from)} - ${clock(b.to)}`,
  }));
  m.spans = refusalSpans(d, span.to);
  m.ticks = d.requests.map((r) => ({ at: r.at, failed: r.refused }));
  m.marks = [
    ...landedTimes(d).map((at) => ({ at, kind: "landed" as const, title: `landed ${clock(at)}` })),
    ...d.directives
      .filter((x) => x.ok && x.done_at !== null)
      .map((x) => ({
        at: x.done_at as number,
        kind: "recovery" as const,
        title: `${x.action} done ${clock(x.done_at as number)}`,
      })),
    ...(d.mark
      ? [
          {
            at: d.mark.at,
            kind: "mark" as const,
            title: `${markWords(d.mark.kind, wasFlagged(d.session))} by ${d.mark.by}`,
          },
        ]
      : []),
  ];
  const flag = firstFlag(d);
  m.flag = flag
    ? { at: flag.at, title: `first flag ${clock(flag.at)}: ${flag.verdict} (${flag.reason ?? "-"})` }
    : null;
  const series = spendSeries(d);
  m.series = [
    { label: "turns since landed", points: series.turns, format: (v) => fmtInt(v) },
    { label: "$ since landed", points: series.usd, format: (v) => fmtUsd(v) },
  ];
  const ticks = 4;
  m.axis = Array.from({ length: ticks + 1 }, (_, i) => {
    const at = span.from + ((span.to - span.from) * i) / ticks;
    return { at, text: span.to - span.from < 600_000 ? clock(at) : clock(at).slice(0, 5) };
  });
  return m;
}
