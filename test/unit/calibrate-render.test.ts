// Rendering: the terminal table, the --json document's exact field names, the
// sweep table, and the HTML report (self-contained, ASCII, SVG per session).
import { describe, expect, test } from "vitest";
import { repeated } from "../../router-ext/calibrate/args.ts";
import { bandsOf, html, renderHtml, timelineSvg } from "../../router-ext/calibrate/html-report.ts";
import type { Proposal } from "../../router-ext/calibrate/proposal.ts";
import {
  ascii,
  renderSummary,
  renderSweep,
  renderTable,
  toJsonDoc,
} from "../../router-ext/calibrate/render.ts";
import type { SweepResult } from "../../router-ext/calibrate/sweep.ts";
import type { ReplayResult, SweepRow } from "../../shared/index.ts";

function result(over: Partial<ReplayResult> = {}): ReplayResult {
  return {
    id: "ses_a",
    parent_id: null,
    agent: "build",
    calls: 4,
    landed: 1,
    verdict: "stalling",
    worst: "looping",
    first_flag_call: 3,
    first_loop_call: 4,
    reason: "duplicates",
    top_target: "read src/app.js",
    top_target_count: 3,
    dup_share: 0.5,
    compactions: 1,
    max_context_tokens: 12345,
    turns: 5,
    usd: 0.01,
    timeline: [
      { call: 1, time: 1, tool: "edit", landed: true, failed: false, verdict: "ok", reason: null },
      { call: 2, time: 2, tool: "read", landed: false, failed: false, verdict: "ok", reason: null },
      {
        call: 3,
        time: 3,
        tool: "bash",
        landed: false,
        failed: true,
        verdict: "stalling",
        reason: "fail_streak",
      },
      {
        call: 4,
        time: 4,
        tool: "read",
        landed: false,
        failed: false,
        verdict: "looping",
        reason: "fail_streak",
      },
    ],
    ...over,
  };
}

const row = (over: Partial<SweepRow> = {}): SweepRow => ({
  thresholds: { stall_turns: 2 },
  loops: 2,
  loopsCaught: 2,
  healthy: 3,
  healthyFlagged: 0,
  medianCallsToDetection: 7,
  maxCallsToDetection: 9,
  ...over,
});
const change = (over: Partial<Proposal> = {}): Proposal => ({
  status: "change",
  row: row(),
  changes: [
    {
      knob: "stall_turns",
      from: 5,
      to: 2,
      direction: "tighter",
      falseFlag: { value: 1, steps: 1, ids: ["ses_h"] },
      missedLoop: { value: 4, steps: 2, ids: ["ses_l1", "ses_l2", "ses_l3"] },
    },
  ],
  reason: "the reason",
  warnings: ["few labels"],
  notProposed: null,
  ...over,
});
const sweepResult = (over: Partial<SweepResult> = {}): SweepResult => ({
  current: row({ thresholds: {}, medianCallsToDetection: 10 }),
  rows: [row()],
  perfect: [row()],
  earliest: row(),
  proposed: row(),
  proposal: change(),
  candidates: 1,
  ms: 3,
  ...over,
});

describe("table", () => {
  test("one aligned line per session with the issue's columns", () => {
    const t = renderTable([
      result(),
      result({ id: "ses_b", first_flag_call: null, worst: "ok", verdict: "ok", top_target: null }),
    ]);
    const lines = t.split("\n");
    expect(lines[0]).toMatch(
      /^session\s+agent\s+calls\s+landed\s+dup\s+verdict\s+worst\s+first flag\s+cmp\s+max ctx\s+top target x count$/,
    );
    expect(lines[1]).toMatch(
      /^ses_a\s+build\s+4\s+1\s+0\.50\s+stalling\s+looping\s+3\s+1\s+12345\s+read src\/app\.js x3$/,
    );
    expect(lines[2]).toMatch(/^ses_b .* ok\s+ok\s+-\s+1\s+12345\s+-$/);
    expect(lines[1]?.indexOf("looping")).toBe(lines[0]?.indexOf("worst"));
  });
  test("a label column appears when labels are known; non-ASCII is replaced", () => {
    const t = renderTable([result({ top_target: "read caf\u00e9.txt" })], { ses_a: "loop" });
    expect(t.split("\n")[0]).toContain("label");
    expect(t).toContain(" loop ");
    expect(t).toContain("read caf?.txt x3");
    expect(ascii("a\u0007b\u00e9")).toBe("a?b?");
  });
  test("summary counts flagged sessions", () => {
    expect(renderSummary([result(), result({ worst: "ok", calls: 6 })])).toBe(
      "2 session(s), 10 tool call(s), 1 flagged",
    );
  });
});

describe("--json", () => {
  test("exactly the replay result fields; the timeline only when asked", () => {
    const doc = toJsonDoc([result()]) as { sessions: Array<Record<string, unknown>> };
    expect(Object.keys(doc)).toEqual(["sessions"]);
    expect(Object.keys(doc.sessions[0] as object)).toEqual([
      "id",
      "parent_id",
      "agent",
      "calls",
      "landed",
      "verdict",
      "worst",
      "first_flag_call",
      "first_loop_call",
      "reason",
      "top_target",
      "top_target_count",
      "dup_share",
      "compactions",
      "max_context_tokens",
      "turns",
      "usd",
    ]);
    const full = toJsonDoc([result()], { timeline: true }) as { sessions: ReplayResult[] };
    expect(full.sessions[0]?.timeline).toHaveLength(4);
  });
  test("a sweep adds a sweep key with the current row and the proposal", () => {
    const doc = toJsonDoc([result()], { sweep: sweepResult() }) as { sweep: Record<string, unknown> };
    expect(Object.keys(doc.sweep)).toEqual(["candidates", "current", "proposed", "proposal", "perfect"]);
  });
});

describe("sweep table", () => {
  test("current row first, then the perfect candidates, then the proposal as YAML", () => {
    const text = renderSweep(sweepResult());
    const lines = text.split("\n");
    expect(lines[0]).toMatch(/^sweep: 1 candidate\(s\), 1 catch every labelled loop/);
    expect(lines[2]).toMatch(/^\(current\)\s+2\/2\s+0\/3\s+10\s+9$/);
    expect(lines[3]).toMatch(/^stall_turns=2\s+2\/2\s+0\/3\s+7\s+9$/);
    expect(text).toContain(
      "proposed: stall_turns=2 (loops caught 2/2, healthy flagged 0/3, median first flag 7)",
    );
    // Each moved knob with its margins on the labels, the warnings and the rule, then the YAML.
    expect(text).toContain(
      "  stall_turns 5 -> 2 (tighter): nearest false flag on the labels 1 (-1): ses_h, 1 step(s) away; nearest missed loop 4 (+2): ses_l1, ses_l2, +1 more, 2 step(s) away",
    );
    expect(text).toContain("\nwarning: few labels\nrule: a change is proposed only when the labels show");
    expect(text).toContain("thresholds:\n  stall_turns: 2");
  });
  test("keep: no YAML, the earlier candidate shown as not proposed and why", () => {
    const keep = renderSweep(
      sweepResult({
        proposal: change({
          status: "keep",
          row: row({ thresholds: {} }),
          changes: [],
          notProposed: { row: row({ thresholds: { top_warn: 4 } }), why: "no evidence" },
        }),
      }),
    );
    expect(keep).toContain("proposed: keep the current thresholds (loops caught 2/2,");
    expect(keep).toContain(
      "  not proposed: top_warn=4 (loops caught 2/2, healthy flagged 0/3, median first flag 7): no evidence",
    );
    expect(keep).not.toContain("thresholds:\n");
  });
  test("says so when nothing is safe, and cuts long lists", () => {
    const none = change({ status: "none", row: null, changes: [] });
    expect(renderSweep(sweepResult({ proposed: null, perfect: [], proposal: none }))).toContain(
      "proposed: none\n  why: the reason",
    );
    const many = Array.from({ length: 5 }, (_, i) => row({ thresholds: { stall_turns: i + 1 } }));
    expect(renderSweep(sweepResult({ perfect: many }), 2)).toContain("... 3 more");
  });
});

describe("html", () => {
  test("escapes markup and turns non-ASCII into character references", () => {
    expect(html(`<a href="x">&'</a>`)).toBe("&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    expect(html("caf\u00e9 \u{1f600}")).toBe("caf&#xe9; &#x1f600;");
  });

  test("verdict bands are runs of one verdict", () => {
    expect(bandsOf(result().timeline)).toEqual([
      { from: 1, to: 2, verdict: "ok" },
      { from: 3, to: 3, verdict: "stalling" },
      { from: 4, to: 4, verdict: "looping" },
    ]);
  });

  test("the SVG has bands, call ticks, failed ticks, landed marks and the first-flag line", () => {
    const svg = timelineSvg(result(), 400);
    expect(svg.match(/<rect /g)).toHaveLength(3);
    expect(svg).toContain("calls 3-3: stalling");
    expect(svg).toContain('stroke="#8b0000"'); // one failed call
    expect(svg).toContain('fill="#1b873f"'); // one landed mark
    expect(svg).toContain("first flag at call 3");
    expect(timelineSvg(result({ first_flag_call: null, timeline: [] }))).not.toContain("first flag");
  });

  test("the report is self-contained ASCII with one timeline per session and the sweep", () => {
    const page = renderHtml(
      [result(), result({ id: "ses_<b>", parent_id: "ses_a", top_target: "read \u00fcber.md" })],
      { labels: { ses_a: "loop" }, sweep: sweepResult(), sources: ["x.db"], generatedAt: new Date(0) },
    );
    expect(page.startsWith("<!doctype html>")).toBe(true);
    expect(page).toMatch(/^[\t\n\x20-\x7e]*$/);
    expect(page.match(/<svg /g)).toHaveLength(2);
    expect(page).not.toMatch(/<(script|link|img|iframe)\b/i);
    // The only URL is the SVG namespace, which is not fetched.
    expect(page.match(/https?:\/\/[^"\s]+/g)).toEqual([
      "http://www.w3.org/2000/svg",
      "http://www.w3.org/2000/svg",
    ]);
    for (const part of [
      // Session ids and targets are escaped, never markup.
      "ses_&lt;b&gt;",
      "child of ses_a",
      "read &#xfc;ber.md",
      // Labels, the sweep and its proposal, times in ISO form.
      "labelled loop",
      "<h2>Threshold sweep</h2>",
      '<tr class="proposed">',
      "1970-01-01T00:00:00.000Z",
    ])
      expect(page).toContain(part);
  });
});

describe("repeatable flags", () => {
  test("every --export value, both spellings, comma lists split", () => {
    expect(
      repeated(["--export", "a", "--json", "--export=b,c", "--", "--export", "z"], "export", "c"),
    ).toEqual(["a", "b", "c"]);
    expect(repeated([], "export", "x,y")).toEqual(["x", "y"]);
    expect(repeated(["--session"], "session", undefined)).toEqual([]);
  });
});
