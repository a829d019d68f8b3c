// `calibrate --margins`: per knob, the nearest value that flags a labelled
// healthy run and the nearest that misses a labelled loop. On a tiny set with
// a known answer (a recorded read loop, and the same run cut short labelled
// healthy), and against a plain step-by-step scan on the recorded corpus.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { loadConfig } from "../../router-ext/calibrate/config.ts";
import { type Knob, margins, SCANS, scanValues } from "../../router-ext/calibrate/margins.ts";
import { renderMargins } from "../../router-ext/calibrate/render.ts";
import { loadExports, type SourceSession, sessionsFromExport } from "../../router-ext/calibrate/sources.ts";
import { prepare, tallies } from "../../router-ext/calibrate/sweep.ts";
import { type Label, type Policy, policyFromConfig, type Thresholds } from "../../shared/index.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
const base = policyFromConfig(loadConfig().config);

const toolParts = (s: SourceSession) =>
  s.messages.reduce(
    (n, m) => n + (m.parts as Array<{ type?: string }>).filter((p) => p.type === "tool").length,
    0,
  );

/** The recorded read loop, and a copy under another id cut after `keep` tool calls. */
function readLoopAndPrefix(keep: number): { loop: SourceSession; short: SourceSession } {
  const text = readFileSync(join(RECORDED, "read-loop.json"), "utf8");
  const [loop] = sessionsFromExport(JSON.parse(text)) as [SourceSession];
  const [copy] = sessionsFromExport(JSON.parse(text.replaceAll(loop.id, "ses_shortcopy"))) as [SourceSession];
  const messages: SourceSession["messages"][number][] = [];
  let calls = 0;
  for (const m of copy.messages) {
    const n = (m.parts as Array<{ type?: string }>).filter((p) => p.type === "tool").length;
    if (calls + n > keep) break;
    calls += n;
    messages.push(m);
  }
  return { loop, short: { ...copy, messages } };
}

describe("margins on a set with a known answer", () => {
  test("only the repeat rule can fire: false flag at the short run's repeat count, miss one past the loop's", () => {
    const keep = 5;
    const { loop, short } = readLoopAndPrefix(keep);
    const reads = toolParts(loop);
    expect(toolParts(short)).toBe(keep);
    // Every other rule out of reach, the stall gate open from the first turn.
    const policy: Policy = {
      ...base,
      thresholds: {
        ...base.thresholds,
        stall_turns: 1,
        loop_turns: 1000,
        top_warn: 10,
        top_loop: 1000,
        row_warn: 1000,
        row_loop: 1000,
        dup_warn: 1,
        dup_loop: 1,
        cum_warn: 1000,
        cum_loop: 1000,
        ceiling_turns: 1000,
      },
    };
    const labels: Record<string, Label> = { [loop.id]: "loop", [short.id]: "healthy" };
    const [m] = margins(prepare([loop, short], policy), labels, policy, ["top_warn"]);
    // The same call with the same result `keep` times flags at top_warn <= keep; `reads` times at <= reads.
    expect(m?.falseFlag).toEqual({ value: keep, ids: [short.id] });
    expect(m?.missedLoop).toEqual({ value: reads + 1, ids: [loop.id] });
    expect(m?.safe).toEqual({ from: keep + 1, to: reads });
    const text = renderMargins(m ? [m] : [], { loops: 1, healthy: 1, trees: 2, ms: 1 });
    expect(text).toMatch(
      new RegExp(
        `top_warn +10 +${keep + 1}\\.\\.${reads} +${keep} \\(-${10 - keep}\\): ses_shortcopy +${reads + 1} \\(\\+${reads + 1 - 10}\\): ${loop.id}`,
      ),
    );
  });

  test("a current value that already flags a healthy run is its own nearest false flag, with no safe range", () => {
    const { loop, short } = readLoopAndPrefix(8);
    const policy: Policy = { ...base, thresholds: { ...base.thresholds, stall_turns: 1, top_warn: 3 } };
    const [m] = margins(
      prepare([loop, short], policy),
      { [loop.id]: "loop", [short.id]: "healthy" },
      policy,
      ["top_warn"],
    );
    expect(m?.falseFlag).toEqual({ value: 3, ids: [short.id] });
    expect(m?.safe).toBeNull();
  });
});

describe("the gallop agrees with a plain scan of every step", () => {
  // The recorded corpus plus cut-short copies labelled healthy, under the shipped thresholds and
  // under raised ones that put the edges several steps out (so the bisection is exercised).
  const raised: Policy = {
    ...base,
    thresholds: {
      ...base.thresholds,
      stall_turns: 2,
      min_calls: 30,
      top_warn: 14,
      row_warn: 12,
      cum_warn: 15,
      fail_warn: 12,
      dup_warn: 0.95,
      dup_loop: 0.95,
    },
  };
  test.each([
    ["shipped", base, 5],
    ["raised", raised, 7],
  ] as const)(
    "nearest false flag and nearest missed loop, per knob (%s thresholds)",
    (_name, policy, cut) => {
      const rec = loadExports([RECORDED]);
      const { short } = readLoopAndPrefix(cut);
      const sessions = [...rec.sessions, short];
      const labels: Record<string, Label> = { ...rec.labels, [short.id]: "healthy" };
      const prepared = prepare(sessions, policy);
      const knobs: Knob[] = [
        "min_calls",
        "stall_turns",
        "dup_warn",
        "top_warn",
        "row_warn",
        "retrace_warn",
        "cum_warn",
        "fail_warn",
        "novelty_ro_warn",
      ];
      const fast = margins(prepared, labels, policy, knobs);
      let edges = 0;
      for (const m of fast) {
        const current = policy.thresholds[m.knob];
        const range = SCANS[m.knob](current, policy.thresholds);
        const trouble = (v: number) => {
          const res = tallies(prepared, policy, { ...policy.thresholds, [m.knob]: v } as Thresholds);
          const ids = prepared.sessions.map((s) => s.id);
          return {
            flagged: ids.filter((id) => labels[id] === "healthy" && res.get(id)?.worst !== "ok"),
            missed: ids.filter((id) => labels[id] === "loop" && res.get(id)?.firstFlag === null),
          };
        };
        const values = scanValues(current, range);
        const c = values.indexOf(current);
        const out = (dir: number) => (dir < 0 ? values.slice(0, c + 1).reverse() : values.slice(c));
        const flagSide = range.flagsMore === "lower" ? -1 : 1;
        const firstWith = (vals: number[], key: "flagged" | "missed") => {
          for (const v of vals) {
            const ids = trouble(v)[key];
            if (ids.length) return { value: v, ids };
          }
          return null;
        };
        expect(m.falseFlag, m.knob).toEqual(firstWith(out(flagSide), "flagged"));
        expect(m.missedLoop, m.knob).toEqual(firstWith(out(-flagSide), "missed"));
        for (const e of [m.falseFlag, m.missedLoop]) if (e && e.value !== current) edges++;
      }
      // Not vacuous: edges away from the current value were found.
      expect(edges).toBeGreaterThan(0);
    },
  );

  test("the command prints the margins table and puts it in --json", async () => {
    const r = await calibrateCaptured({ exports: [RECORDED], margins: true, json: true });
    expect(r.code, r.err).toBe(0);
    const doc = JSON.parse(r.out) as { margins: Array<{ knob: string }> };
    expect(doc.margins.map((m) => m.knob)).toEqual(Object.keys(SCANS));
    expect(doc.margins.map((m) => m.knob)).not.toContain("window");
  });
});
