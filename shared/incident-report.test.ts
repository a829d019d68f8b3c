import { describe, expect, it } from "vitest";
import { quietSignals } from "./_test-signals.ts";
import { configSchema } from "./config.ts";
import { SessionForest } from "./forest.ts";
import { avoidLine, type IncidentInput, incidentReport, incidentSummary } from "./incident-report.ts";
import { policyFromConfig } from "./policy.ts";
import { type RawToolCall, toToolCall } from "./tool-call.ts";
import type { FlagReason, Signals } from "./types.ts";

const policy = policyFromConfig(configSchema.parse({}));
const SECRET = "sk-live-SuperSecretValue1234567890";

/** The item-2 worker of incident #8: 423 calls, nothing landed, navbar.js read over and over. */
function base(over: Partial<Signals> = {}): Signals {
  const navbar = { tool: "read", target: "admin/frontend/navbar.js", count: 30 };
  return quietSignals({
    calls: 423,
    turns: 400,
    callsSinceLanded: 423,
    turnsSinceLanded: 400,
    usdSinceLanded: 1.8412,
    promptTokensSinceLanded: 70_000_000,
    usdTotal: 1.8412,
    dupShare: 0.3,
    ndupShare: 0.45,
    sameShare: 0.3,
    repeatShare: 0.375,
    contextTokens: 90_000,
    maxContextTokens: 90_000,
    busiestTarget: navbar.target,
    busiestTargetCount: 30,
    topRepeat: navbar,
    topSame: navbar,
    mostRepeated: [
      { ...navbar, count: 61 },
      { tool: "read", target: "tests/test_admin_js_units.py", count: 16 },
    ],
    novelty: 0.1,
    callsSinceNovel: 3,
    ...over,
  });
}

/** A report's input: a recovered root session "s" of agent build with base() signals, unless told. */
const input = (over: Partial<IncidentInput> = {}): IncidentInput => ({
  sessionId: "s",
  agent: "build",
  parentId: null,
  verdict: "ok",
  reason: null,
  signals: base(),
  ...over,
});

describe("incident report format (spec section 5)", () => {
  it("has the header, session, calls, most-repeated, spend and Avoid lines", () => {
    const text = incidentReport({
      sessionId: "ses_item2",
      agent: "sisyphus-junior",
      parentId: "ses_atlas",
      verdict: "looping",
      reason: "duplicates",
      signals: base(),
      action: "was stopped",
    });
    expect(text.split("\n")).toEqual([
      "[stallguard] A sub-agent is looping and was stopped.",
      "  session: ses_item2 (sisyphus-junior, child of ses_atlas)",
      "  423 tool calls, 0 landed changes (no edit with a diff, no commit), 400 turns since the last landed change",
      "  most repeated: read admin/frontend/navbar.js x61, read tests/test_admin_js_units.py x16",
      "  same call, same result: read admin/frontend/navbar.js x30 since the last landed change",
      "  spend since last landed change: $1.84, 70M prompt tokens, context 90k",
      `Avoid: ${avoidLine("duplicates", base()).slice("Avoid: ".length)}`,
    ]);
    expect(text).toMatch(/\nAvoid: re-reading and re-running/);
  });

  it("a root session, with failures, flip-flops and continuation lines", () => {
    const text = incidentReport(
      input({
        sessionId: "ses_atlas",
        agent: "atlas",
        verdict: "stalling",
        reason: "fail_streak",
        signals: base({
          landed: 3,
          failStreak: 5,
          failTarget: "pytest tests/t.py",
          flipFlops: 2,
          injectedSinceLanded: 3,
          promptTokensSinceLanded: 1500,
          contextTokens: 0,
        }),
      }),
    );
    const lines = text.split("\n");
    expect(lines[0]).toBe("[stallguard] A session is stalling.");
    expect(lines[1]).toBe("  session: ses_atlas (atlas, root session)");
    expect(lines[2]).toBe("  423 tool calls, 3 landed, 400 turns since the last landed change");
    expect(lines).toContain("  failing: 5 failures in a row on pytest tests/t.py");
    expect(lines).toContain("  2 edits only undid or repeated an earlier edit");
    expect(lines).toContain("  3 injected continuation turns since landed");
    expect(lines).toContain("  spend since last landed change: $1.84, 1.5k prompt tokens");
    expect(lines.at(-1)).toMatch(/^Avoid: retrying a call that keeps failing/);
  });

  it("a recovered report has no Avoid line", () => {
    const text = incidentReport(input());
    expect(text.split("\n")[0]).toBe("[stallguard] A session recovered.");
    expect(text).not.toContain("Avoid:");
  });

  it("picks the Avoid line from the dominant reason; every reason has its own line", () => {
    const reasons: FlagReason[] = [
      "duplicates",
      "repeat_target",
      "in_a_row",
      "cycle",
      "retrace",
      "fail_streak",
      "whole_session",
      "continuations",
      "flip_flop",
      "ceiling",
      "read_only_repeat",
      "read_only_failures",
      "read_only_novelty",
    ];
    const lines = reasons.map((r) => avoidLine(r, base()));
    expect(new Set(lines).size).toBe(reasons.length);
    for (const l of lines) expect(l).toMatch(/^Avoid: \S/);
    expect(avoidLine("flip_flop", base())).toContain("back and forth");
    expect(avoidLine("retrace", base())).toContain("in the same order");
    expect(avoidLine("in_a_row", base())).toContain("same call again and again");
    expect(avoidLine("read_only_failures", base())).toContain("missing");
    expect(avoidLine(null, base())).toBe(avoidLine("ceiling", base()));
  });

  it("a huge context dominates, except for failure streaks", () => {
    const big = base({ contextTokens: 600_000 });
    expect(avoidLine("duplicates", big)).toContain("huge context");
    expect(avoidLine("repeat_target", big)).toContain("huge context");
    expect(avoidLine("fail_streak", big)).not.toContain("huge context");
    expect(avoidLine("read_only_failures", big)).not.toContain("huge context");
  });

  it("is deterministic and bounded", () => {
    const looping = input({ agent: "a", verdict: "looping", reason: "duplicates" });
    expect(incidentReport(looping)).toBe(incidentReport(looping));
    const long = base({ mostRepeated: [{ tool: "read", target: "x/".repeat(5000), count: 9 }] });
    expect(incidentReport({ ...looping, signals: long }).length).toBeLessThanOrEqual(4000);
    expect(incidentReport({ ...looping, signals: long })).toMatch(/^[\x20-\x7e\n]*$/);
  });

  it("summary line", () => {
    expect(incidentSummary(input({ verdict: "stalling", reason: "duplicates" }))).toBe(
      "build stalling: 400 turns, $1.84 since landed; top: read admin/frontend/navbar.js x30",
    );
  });
});

describe("incident report holds no content", () => {
  it("events whose args carry a secret and private text leave neither in the report", () => {
    const f = new SessionForest(policy);
    const mk = (
      tool: string,
      args: unknown,
      metadata: unknown,
      status: RawToolCall["status"] = "completed",
      i = 0,
    ) =>
      toToolCall(
        { tool, callId: `c${i}`, args, metadata, status },
        {
          sessionId: "s",
          parentId: null,
          agent: "build",
          time: i,
          directory: "/home/alice/repo",
          testPatterns: policy.testPatterns,
        },
      );
    const calls = [];
    for (let i = 0; i < 30; i++) {
      calls.push(
        mk(
          "bash",
          {
            command: `API_TOKEN=${SECRET} curl -H "Authorization: Bearer ${SECRET}" https://api.example.com`,
          },
          { exit: 1, output: SECRET },
          "completed",
          i,
        ),
      );
      calls.push(
        mk(
          "edit",
          {
            filePath: "/home/alice/repo/.env",
            oldString: `KEY=${SECRET}`,
            newString: "KEY=private words here",
          },
          { diff: "" },
          "error",
          i,
        ),
      );
      calls.push(mk("grep", { pattern: SECRET, path: "/home/alice/repo" }, {}, "completed", i));
    }
    let last = null;
    for (const call of calls) {
      const r = f.observe({ kind: "tool", call });
      if (r.changes.length) last = r.changes.at(-1);
    }
    expect(last?.verdict).toBe("looping");
    const c = last as NonNullable<typeof last>;
    // A VerdictChange is an incident input as it is (the plugin and the watchdog pass it so).
    const report = incidentReport(c);
    const summary = incidentSummary(c);
    for (const text of [report, summary, JSON.stringify(c.signals)]) {
      expect(text).not.toContain(SECRET);
      expect(text).not.toContain("SuperSecret");
      expect(text).not.toContain("private words");
      expect(text).not.toContain("alice");
      expect(text).not.toContain("Bearer");
    }
    expect(report).toContain("curl -H");
  });
});
