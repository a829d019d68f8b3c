// The evidence behind a session's verdict in plain terms: which signal fired,
// the repeated calls with their counts, the failure streak, the context size,
// each beside the thresholds it is judged against. Pure: from the detail
// answer's transitions and live thresholds (router-ext/api/session-detail.ts).
import type { EvidenceView, SessionDetail, TransitionView } from "../../api/session-detail.ts";
import { fmtInt, fmtUsd } from "./format.ts";

export interface EvidenceRow {
  /** Stable key for the row (tests and styling). */
  key: string;
  label: string;
  value: string;
  /** "warn at X, loop at Y" or "-". */
  limits: string;
  /** This is the signal the verdict names. */
  fired: boolean;
}

/** Each flag reason in a few plain words. */
export const REASON_TEXT: Record<string, string> = {
  duplicates: "calls repeat without edits",
  repeat_target: "the same call, the same result, again and again",
  in_a_row: "the same call (or two in turn) over and over in a row, the same results",
  cycle: "the same few calls going round, the same results each time",
  retrace: "a sweep of calls done again in the same order, the same results",
  fail_streak: "the same call keeps failing",
  whole_session: "one call repeated across the whole session",
  continuations: "continuing on injected prompts, nothing landed",
  flip_flop: "edits undone and redone",
  ceiling: "a long stretch without a landed change",
  read_only_repeat: "re-reading the same sources",
  read_only_failures: "a lookup that keeps failing",
  read_only_novelty: "searching without finding anything new",
};

/** Which evidence row each reason stands on. */
const FIRED_BY: Record<string, string> = {
  duplicates: "repeat_share",
  repeat_target: "same_result",
  in_a_row: "in_a_row",
  cycle: "cycle",
  retrace: "retrace",
  whole_session: "same_result",
  read_only_repeat: "same_result",
  fail_streak: "fail_streak",
  read_only_failures: "fail_streak",
  flip_flop: "flip_flops",
  continuations: "injected",
  ceiling: "turns",
  read_only_novelty: "top_targets",
};

/**
 * The repetition shapes, each a row of its own when the plugin reported it or
 * its rule fired: the value in words (empty: not reported) and its knobs (a
 * read-only agent: "-", or the level it is warned at).
 */
const SHAPES: ReadonlyArray<{
  key: "cycle" | "in_a_row" | "retrace";
  label: string;
  value: (ev: EvidenceView | null | undefined) => string | null | undefined;
  knobs: (ro: boolean) => [string, string] | null;
}> = [
  {
    key: "cycle",
    label: "same calls going round",
    value: (ev) => ev?.cycle && `${ev.cycle.period} calls (one: ${ev.cycle.target}) x${ev.cycle.reps} turns`,
    knobs: (ro) => (ro ? null : ["cycle_warn", "cycle_loop"]),
  },
  {
    key: "in_a_row",
    label: "same calls in a row",
    value: (ev) =>
      ev?.in_a_row &&
      `${ev.in_a_row.period === 1 ? ev.in_a_row.target : `2 calls in turn (one: ${ev.in_a_row.target})`} repeated ${ev.in_a_row.repeats} times`,
    knobs: (ro) => (ro ? null : ["row_warn", "row_loop"]),
  },
  {
    key: "retrace",
    label: "calls redone in the same order",
    value: (ev) =>
      ev?.retrace &&
      `${ev.retrace.distinct} different calls of a ${ev.retrace.period}-call sweep (latest: ${ev.retrace.target})`,
    // read-only agents are only warned, at the workers' looping level
    knobs: (ro) => (ro ? ["retrace_loop", ""] : ["retrace_warn", "retrace_loop"]),
  },
];

/** The transition the verdict stands on: the latest flag, else the latest transition. */
export function verdictTransition(d: SessionDetail): TransitionView | null {
  const ts = d.transitions;
  for (let i = ts.length - 1; i >= 0; i--)
    if ((ts[i] as TransitionView).verdict !== "ok") return ts[i] ?? null;
  return ts[ts.length - 1] ?? null;
}

function limits(
  th: Record<string, number>,
  warn: string,
  loop: string,
  fmt = (v: number) => String(v),
): string {
  const w = th[warn];
  const l = th[loop];
  if (w === undefined && l === undefined) return "-";
  return [w === undefined ? null : `warn at ${fmt(w)}`, l === undefined ? null : `loop at ${fmt(l)}`]
    .filter(Boolean)
    .join(", ");
}

type Row = (key: string, label: string, value: string, lim: string) => EvidenceRow;
type Thresholds = SessionDetail["thresholds"];

/** The most repeated calls, and the call repeated with the same result. */
function repeatTexts(t: TransitionView): { tops: string; same: string } {
  const ev = t.evidence;
  const tops = ev?.top_targets.length
    ? ev.top_targets.map((r) => `${r.target} x${r.count}`).join(", ")
    : t.top_target
      ? `${t.top_target} x${t.top_target_count}`
      : "-";
  const same = ev?.same_result ? `${ev.same_result.target} x${ev.same_result.count}` : "-";
  return { tops, same };
}

/** The rows every flagged session shows, in order. */
function alwaysRows(d: SessionDetail, t: TransitionView, row: Row): EvidenceRow[] {
  const s = t.signals;
  const th = d.thresholds;
  const ev = t.evidence;
  // The judge saw the reporter's figures; the readout prefers the gate's. Say both when they differ.
  const gate = d.session.spend_source === "gate";
  const also = (own: string, now: string) => (gate && own !== now ? `${own} (gate now: ${now})` : own);
  const { tops, same } = repeatTexts(t);
  return [
    row(
      "signal",
      "signal",
      t.reason ? `${t.reason}: ${REASON_TEXT[t.reason] ?? t.reason}` : "none (ok)",
      "-",
    ),
    row("top_targets", "most repeated calls", tops, "-"),
    row(
      "same_result",
      "same call, same result",
      same,
      s.read_only ? limits(th, "top_ro_warn", "top_ro_loop") : limits(th, "top_warn", "top_loop"),
    ),
    row(
      "fail_streak",
      "failure streak",
      s.fail_streak > 0 ? `${s.fail_streak} in a row${ev?.fail_target ? ` on ${ev.fail_target}` : ""}` : "0",
      limits(th, "fail_warn", "fail_loop"),
    ),
    row(
      "repeat_share",
      "repeat share of the window",
      `${Math.round(s.dup_share * 100)}%`,
      limits(th, "dup_warn", "dup_loop", (v) => `${Math.round(v * 100)}%`),
    ),
    row(
      "turns",
      "turns since landed",
      also(fmtInt(s.turns_since_landed), fmtInt(d.session.turns_since_landed)),
      limits(th, "stall_turns", "loop_turns"),
    ),
    row(
      "usd",
      "$ since landed",
      also(fmtUsd(s.usd_since_landed), fmtUsd(d.session.usd_since_landed)),
      limits(th, "stall_usd", "loop_usd", (v) => fmtUsd(v)),
    ),
    row("context", "context size", `${fmtInt(s.context_tokens)} tokens`, "-"),
  ];
}

/** The loop shapes that have a value or fired, flip-flops and injected continuations when there are any. */
function occasionalRows(t: TransitionView, th: Thresholds, fired: string | null, row: Row): EvidenceRow[] {
  const s = t.signals;
  const rows: EvidenceRow[] = [];
  for (const shape of SHAPES) {
    const value = shape.value(t.evidence);
    if (!value && fired !== shape.key) continue;
    const knobs = shape.knobs(s.read_only);
    rows.push(row(shape.key, shape.label, value || "-", knobs ? limits(th, ...knobs) : "-"));
  }
  if (s.flip_flops > 0)
    rows.push(
      row("flip_flops", "edits undone or redone", String(s.flip_flops), limits(th, "flip_warn", "flip_loop")),
    );
  if (s.injected_since_landed > 0)
    rows.push(
      row(
        "injected",
        "injected continuations",
        String(s.injected_since_landed),
        limits(th, "continuation_warn", ""),
      ),
    );
  return rows;
}

/** The rows for the page, the fired one marked; empty when nothing was reported. */
export function evidenceRows(d: SessionDetail): EvidenceRow[] {
  const t = verdictTransition(d);
  if (!t) return [];
  const fired = t.verdict === "ok" || !t.reason ? null : (FIRED_BY[t.reason] ?? null);
  const row: Row = (key, label, value, lim) => ({ key, label, value, limits: lim, fired: key === fired });
  return [...alwaysRows(d, t, row), ...occasionalRows(t, d.thresholds, fired, row)];
}
