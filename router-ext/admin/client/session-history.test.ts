import { describe, expect, it } from "vitest";
import { loopEvidence } from "../../../test/helpers/wire-fixtures.ts";
import type { SessionDetail, TransitionView } from "../../api/session-detail.ts";
import { drawTimeline } from "../../timeline/draw.ts";
import { toSvgText } from "../../timeline/svg.ts";
import { evidenceRows } from "./evidence.ts";
import {
  actionsOf,
  landedTimes,
  refusalSpans,
  sessionTimeline,
  spendSeries,
  timeSpan,
  verdictBands,
} from "./session-history.ts";

const T = 1_800_000_000_000;
const MIN = 60_000;

const sig = (over: Partial<TransitionView["signals"]> = {}): TransitionView["signals"] => ({
  calls: 30,
  landed: 1,
  turns_since_landed: 9,
  calls_since_landed: 20,
  usd_since_landed: 0.6,
  dup_share: 0.55,
  fail_streak: 0,
  context_tokens: 40_000,
  flip_flops: 0,
  injected_since_landed: 0,
  read_only: false,
  last_landed_at: T + 2 * MIN,
  ...over,
});

const tr = (
  at: number,
  previous: TransitionView["verdict"],
  verdict: TransitionView["verdict"],
  over: Partial<TransitionView> = {},
): TransitionView => ({
  verdict,
  previous,
  reason: verdict === "ok" ? null : "repeat_target",
  source: "plugin",
  at,
  signals: sig(),
  top_target: "read src/a.ts",
  top_target_count: 9,
  evidence: null,
  ...over,
});

function detail(over: Partial<SessionDetail> = {}): SessionDetail {
  return {
    session: {
      session_id: "ses_w",
      parent_id: "ses_r",
      root_id: "ses_r",
      agent: "general",
      verdict: "looping",
      worst: "looping",
      flags: 1,
      stage: "stopped",
      plugin_live: true,
      plugin_version: "0.1.0",
      turns_since_landed: 22,
      usd_since_landed: 1.2,
      context_tokens: 90_000,
      top_target: "read src/a.ts",
      top_target_count: 14,
      source: "plugin",
      last_seen_at: T + 20 * MIN,
      last_landed_at: T + 2 * MIN,
      reason: "repeat_target",
      report: "r",
      refused: true,
      stopped_by: "stallguard",
      stopped_at: T + 12 * MIN,
      spend_source: "gate",
      cannot_act: null,
      mark: null,
    },
    children: [],
    transitions: [
      tr(T + 6 * MIN, "ok", "stalling"),
      tr(T + 10 * MIN, "stalling", "looping", { signals: sig({ fail_streak: 3, usd_since_landed: 1.2 }) }),
    ],
    samples: [
      { at: T + MIN, turns_since_landed: 1, last_landed_at: T + 30_000, context_tokens: 1000 },
      { at: T + 3 * MIN, turns_since_landed: 1, last_landed_at: T + 2 * MIN, context_tokens: 2000 },
    ],
    requests: [
      {
        at: T + MIN,
        session_id: "ses_w",
        agent: "general",
        status: 200,
        refused: false,
        cost_usd: 0.1,
        context_tokens: 100,
      },
      {
        at: T + 3 * MIN,
        session_id: "ses_w",
        agent: "general",
        status: 200,
        refused: false,
        cost_usd: 0.2,
        context_tokens: 100,
      },
      {
        at: T + 4 * MIN,
        session_id: "ses_c",
        agent: "explore",
        status: 200,
        refused: false,
        cost_usd: 0.3,
        context_tokens: 100,
      },
      {
        at: T + 13 * MIN,
        session_id: "ses_w",
        agent: "general",
        status: 403,
        refused: true,
        cost_usd: null,
        context_tokens: null,
      },
    ],
    refusals: [
      {
        scope: "session",
        key: "ses_w",
        state: "stopped",
        reason: "recovering",
        by: "stallguard",
        at: T + 8 * MIN,
      },
      {
        scope: "session",
        key: "ses_w",
        state: "running",
        reason: "recover completed",
        by: "stallguard",
        at: T + 9 * MIN,
      },
      {
        scope: "tree",
        key: "ses_r",
        state: "stopped",
        reason: "hard stop",
        by: "stallguard",
        at: T + 12 * MIN,
      },
    ],
    directives: [
      {
        action: "recover",
        session_id: "ses_w",
        created_at: T + 8 * MIN,
        done_at: T + 9 * MIN,
        ok: true,
        error: null,
      },
    ],
    cap: null,
    mark: null,
    thresholds: {
      top_warn: 6,
      top_loop: 12,
      fail_warn: 8,
      fail_loop: 12,
      dup_warn: 0.4,
      dup_loop: 0.6,
      stall_turns: 5,
      loop_turns: 20,
      stall_usd: 1,
      loop_usd: 3,
    },
    now: T + 20 * MIN,
    ...over,
  };
}

describe("a session's history", () => {
  it("verdict bands run from the first transition's previous verdict to the end of the axis", () => {
    const d = detail();
    expect(verdictBands(d, { from: T, to: T + 20 * MIN })).toEqual([
      { from: T, to: T + 6 * MIN, verdict: "ok" },
      { from: T + 6 * MIN, to: T + 10 * MIN, verdict: "stalling" },
      { from: T + 10 * MIN, to: T + 20 * MIN, verdict: "looping" },
    ]);
  });

  it("landed changes come from heartbeats and transitions, once each", () => {
    expect(landedTimes(detail())).toEqual([T + 30_000, T + 2 * MIN]);
  });

  it("refusals are spans from stopped to running; one still holding runs to the end", () => {
    expect(refusalSpans(detail(), T + 20 * MIN).map((s) => [s.from, s.to, s.title])).toEqual([
      [T + 8 * MIN, T + 9 * MIN, "session refused by stallguard (recovering)"],
      [T + 12 * MIN, T + 20 * MIN, "tree refused by stallguard (hard stop)"],
    ]);
  });

  it("turns and $ since landed count the gate's served requests (children too) and start over at each landed change", () => {
    const s = spendSeries(detail());
    expect(s.turns).toEqual([
      [T + 30_000, 0],
      [T + MIN, 1],
      [T + 2 * MIN, 0],
      [T + 3 * MIN, 1],
      [T + 4 * MIN, 2],
    ]);
    expect(s.usd.at(-1)).toEqual([T + 4 * MIN, 0.5]);
  });

  it("without gate records the reporter's figures are used", () => {
    const s = spendSeries(detail({ requests: [] }));
    expect(s.turns.map((p) => p[1])).toEqual([1, 1, 9, 9]);
    expect(s.usd).toEqual([
      [T + 6 * MIN, 0.6],
      [T + 10 * MIN, 1.2],
    ]);
  });

  it("the mode's actions, oldest first, with the mark", () => {
    const d = detail({
      mark: { kind: "false_alarm", by: "bob", at: T + 15 * MIN, verdict: "looping", reason: null },
    });
    expect(actionsOf(d).map((a) => `${a.what} by ${a.by}`)).toEqual([
      "recover requested by stallguard",
      "session refused by stallguard",
      "recover done by plugin",
      "session let through by stallguard",
      "tree refused by stallguard",
      "marked false alarm by bob",
    ]);
  });

  it("the axis spans the session's own activity: a mark or a Resume hours later does not stretch it", () => {
    const pad = 12 * MIN * 0.02;
    const own = { from: T + MIN - pad, to: T + 13 * MIN + pad };
    expect(timeSpan(detail())).toEqual(own);
    const later = detail({
      mark: { kind: "false_alarm", by: "bob", at: T + 5 * 60 * MIN, verdict: "looping", reason: null },
      refusals: [
        ...detail().refusals,
        {
          scope: "tree",
          key: "ses_r",
          state: "running",
          reason: "false alarm",
          by: "bob",
          at: T + 5 * 60 * MIN,
        },
      ],
      now: T + 6 * 60 * MIN,
    });
    const m = sessionTimeline(later);
    expect({ from: m.from, to: m.to }).toEqual(own);
    // The mark is drawn at the axis' end, its time in its title.
    const svg = toSvgText(drawTimeline(m, 800));
    expect(svg).toMatch(
      /<path d="M796\.0 18v26[^"]*" fill="#8250df" data-mark="mark"><title>false alarm by bob<\/title>/,
    );
    // Nothing but heartbeats of an idle session: the axis is its last sign of life.
    const quiet = detail({ transitions: [], samples: [], requests: [], directives: [], refusals: [] });
    expect(timeSpan(quiet)).toEqual({ from: T + 20 * MIN - 1000, to: T + 20 * MIN + 1000 });
  });

  it("draws one timeline: bands, refusal spans, request ticks, landed and recovery marks, the first flag, two charts", () => {
    const svg = toSvgText(drawTimeline(sessionTimeline(detail()), 800));
    expect(svg.match(/<rect /g)).toHaveLength(3);
    expect(svg).toContain("tree refused by stallguard (hard stop)");
    expect(svg).toContain('stroke="#8b0000"'); // the refused request
    expect(svg).toContain('fill="#1b873f"'); // landed
    expect(svg).toContain('data-mark="recovery"');
    expect(svg).toMatch(/first flag \d\d:\d\d:\d\d: stalling \(repeat_target\)/);
    expect(svg).toContain('data-series="turns since landed"');
    expect(svg).toContain('data-series="$ since landed"');
    expect(svg).toMatch(/^[\x20-\x7e]*$/);
  });
});

describe("the evidence in plain terms", () => {
  const byKey = (d: SessionDetail) => Object.fromEntries(evidenceRows(d).map((r) => [r.key, r]));
  it("names the signal, marks the row it fired on, and sets each value beside its thresholds", () => {
    const d = detail({
      transitions: [
        tr(T + 10 * MIN, "stalling", "looping", {
          signals: sig({ fail_streak: 3 }),
          evidence: loopEvidence("read src/a.ts"),
        }),
      ],
    });
    const rows = byKey(d);
    expect(rows.signal?.value).toBe("repeat_target: the same call, the same result, again and again");
    expect(rows.top_targets?.value).toBe("read src/a.ts x14, bash npm test x3");
    expect(rows.same_result).toMatchObject({
      value: "read src/a.ts x14",
      limits: "warn at 6, loop at 12",
      fired: true,
    });
    expect(rows.fail_streak).toMatchObject({ value: "3 in a row on npm test", fired: false });
    expect(rows.repeat_share?.limits).toBe("warn at 40%, loop at 60%");
    expect(rows.usd?.limits).toBe("warn at $1.00, loop at $3.00");
    expect(rows.context?.value).toBe("40,000 tokens");
  });

  it("a cycle gets its own row, beside cycle_warn and cycle_loop, marked when it fired", () => {
    const d = detail({
      thresholds: { ...detail().thresholds, cycle_warn: 5, cycle_loop: 10 },
      transitions: [
        tr(T + 10 * MIN, "ok", "stalling", {
          reason: "cycle",
          evidence: {
            ...loopEvidence("grep src/a.ts"),
            cycle: { target: "grep src/a.ts", period: 2, reps: 5 },
          },
        }),
      ],
    });
    const rows = byKey(d);
    expect(rows.signal?.value).toBe("cycle: the same few calls going round, the same results each time");
    expect(rows.cycle).toMatchObject({
      value: "2 calls (one: grep src/a.ts) x5 turns",
      limits: "warn at 5, loop at 10",
      fired: true,
    });
    expect(rows.same_result?.fired).toBe(false);
    // no cycle reported and none fired: no row
    expect(evidenceRows(detail()).some((r) => r.key === "cycle")).toBe(false);
  });

  it("repeats in a row and a retrace get their own rows, beside their thresholds, marked when they fired", () => {
    const thresholds = {
      ...detail().thresholds,
      row_warn: 5,
      row_loop: 12,
      retrace_warn: 4,
      retrace_loop: 8,
    };
    const flagged = (reason: string, extra: Record<string, unknown>) =>
      detail({
        thresholds,
        transitions: [
          tr(T + 10 * MIN, "ok", "stalling", {
            reason,
            evidence: { ...loopEvidence("grep src/a.ts"), ...extra },
          }),
        ],
      });
    const cases = [
      {
        reason: "in_a_row",
        extra: { in_a_row: { target: "grep src/a.ts", period: 2, repeats: 5 } },
        signal: "the same call (or two in turn) over and over in a row, the same results",
        value: "2 calls in turn (one: grep src/a.ts) repeated 5 times",
        limits: "warn at 5, loop at 12",
      },
      {
        reason: "retrace",
        extra: { retrace: { target: "read src/big.py", period: 12, calls: 4, distinct: 4 } },
        signal: "a sweep of calls done again in the same order, the same results",
        value: "4 different calls of a 12-call sweep (latest: read src/big.py)",
        limits: "warn at 4, loop at 8",
      },
    ];
    for (const c of cases) {
      const rows = byKey(flagged(c.reason, c.extra));
      expect(rows.signal?.value).toBe(`${c.reason}: ${c.signal}`);
      expect(rows[c.reason]).toMatchObject({ value: c.value, limits: c.limits, fired: true });
      expect(rows.same_result?.fired).toBe(false);
      // the other shape was neither reported nor fired: no row
      const other = c.reason === "retrace" ? "in_a_row" : "retrace";
      expect(rows[other]).toBeUndefined();
    }
    // fired but reported by a plugin without the field: the row says so with a dash
    const bare = byKey(flagged("retrace", {}));
    expect(bare.retrace).toMatchObject({ value: "-", fired: true });
  });

  it("an older plugin's transition (no evidence) falls back to the top target", () => {
    const rows = evidenceRows(detail());
    expect(rows.find((r) => r.key === "top_targets")?.value).toBe("read src/a.ts x9");
    expect(rows.find((r) => r.key === "same_result")?.value).toBe("-");
    expect(evidenceRows(detail({ transitions: [] }))).toEqual([]);
  });
});
