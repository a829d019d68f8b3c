// The corpus recorded from the real opencode binary (test/fixtures/recorded,
// made by test/fixtures/record-corpus.ts from test/fixtures/corpus-scenarios.ts),
// replayed with the shipped config/config.yaml: every loop is flagged, no
// healthy session is, the slow loop is caught within 120 calls, and each
// healthy shape stays ok for the reason it should (not by luck of its length).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { loadConfig } from "../../router-ext/calibrate/config.ts";
import { loadExports } from "../../router-ext/calibrate/sources.ts";
import {
  observationsFromMessages,
  observeOptions,
  policyFromConfig,
  type ReplayResult,
  type ReplaySession,
  replay,
  type ToolCall,
  type UserObservation,
} from "../../shared/index.ts";
import { SCENARIOS } from "../fixtures/corpus-scenarios.ts";
import type { ModelReply } from "../helpers/model-server.ts";

const REPO = join(import.meta.dirname, "..", "..");
const RECORDED = join(REPO, "test", "fixtures", "recorded");
/** The project dir as the recordings name it (record-corpus.ts scrubs the real one to this). */
const PROJECT = "/PROJECT_DIR";

// The shipped defaults alone, through the calibrator's loader (no config.local.yaml).
const policy = policyFromConfig(
  loadConfig({ root: null, configPath: join(REPO, "config", "config.yaml") }).config,
);

const { sessions, labels, warnings } = loadExports([RECORDED]);
const results = replay(sessions, policy, { timeline: true });
const labelsDoc = JSON.parse(readFileSync(join(RECORDED, "labels.json"), "utf8")) as Record<
  string,
  { label: string; scenario: string; note: string }
>;
const idOf = new Map(Object.entries(labelsDoc).map(([id, e]) => [e.scenario, id]));

function result(name: string): ReplayResult {
  const r = results.find((x) => x.id === idOf.get(name));
  if (!r) throw new Error(`no recording of ${name}`);
  return r;
}

function session(name: string): ReplaySession {
  const s = sessions.find((x) => x.id === idOf.get(name));
  if (!s) throw new Error(`no recording of ${name}`);
  return s;
}

function observations(s: ReplaySession) {
  return observationsFromMessages(
    { id: s.id, parentId: s.parentId, directory: s.directory },
    s.messages,
    observeOptions(policy),
  );
}

/** The session's tool calls in order, each with whether the replay counted it as landed. */
function calls(name: string): Array<ToolCall & { landed: boolean }> {
  const list = observations(session(name)).flatMap((o) => (o.kind === "tool" ? [o.call] : []));
  const timeline = result(name).timeline;
  expect(timeline.map((t) => t.tool)).toEqual(list.map((c) => c.tool));
  return list.map((c, i) => Object.assign(c, { landed: timeline[i]?.landed ?? false }));
}

/** The stored messages as `opencode export` wrote them (the parts this test reads). */
interface StoredPart {
  type: string;
  text?: string;
  tool?: string;
  state?: { input?: unknown };
}
function messagesOf(s: ReplaySession): Array<{ info: { role?: string }; parts: StoredPart[] }> {
  return s.messages as unknown as Array<{ info: { role?: string }; parts: StoredPart[] }>;
}

/** The text of a session's first user message (a sub-agent's task prompt). */
function firstUserText(s: ReplaySession): string {
  const user = messagesOf(s).find((m) => m.info.role === "user");
  return (user?.parts ?? []).map((p) => (p.type === "text" ? (p.text ?? "") : "")).join("");
}

const flagged = (r: ReplayResult) => `${r.worst} at call ${r.first_flag_call} (${r.reason})`;

/** Between any two calls matching `pick`, something landed: each one starts a fresh stretch. */
function landedBetweenEach(
  list: ReadonlyArray<ToolCall & { landed: boolean }>,
  pick: (c: ToolCall) => boolean,
) {
  const at = list.flatMap((c, i) => (pick(c) ? [i] : []));
  for (let k = 1; k < at.length; k++) {
    const between = list.slice((at[k - 1] as number) + 1, at[k]);
    expect(
      between.some((c) => c.landed),
      `nothing landed between calls ${(at[k - 1] as number) + 1} and ${(at[k] as number) + 1}`,
    ).toBe(true);
  }
  return at.length;
}

const outcomes = (list: readonly ToolCall[]) => new Set(list.map((c) => c.outcome)).size;

/** The session re-reads `target` n times with one answer each time, and something lands between reads. */
function expectRereadsBetweenLandings(name: string, target: string, n: number) {
  const list = calls(name);
  const reads = list.filter((c) => c.target === target);
  expect(reads).toHaveLength(n);
  expect(outcomes(reads)).toBe(1);
  expect(landedBetweenEach(list, (c) => c.target === target)).toBe(n);
  return list;
}

describe("recorded corpus: loading", () => {
  test("every file loads with its label; every scenario has its recording", () => {
    expect(warnings).toEqual([]);
    const files = readdirSync(RECORDED).filter((f) => f.endsWith(".json") && f !== "labels.json");
    expect(sessions).toHaveLength(files.length);
    expect(Object.keys(labels).sort()).toEqual(sessions.map((s) => s.id).sort());
    for (const f of files) {
      const doc = JSON.parse(readFileSync(join(RECORDED, f), "utf8")) as { info: { id: string } };
      expect(labelsDoc[doc.info.id]?.scenario, f).toBe(f.slice(0, -".json".length));
    }
    for (const s of SCENARIOS) expect(idOf.has(s.name), s.name).toBe(true);
    expect(Object.values(labelsDoc).every((e) => e.note.length > 0)).toBe(true);
  });

  test("each recording ran exactly its scenario's scripted calls (re-record after changing one)", () => {
    const scripted = (replies: ModelReply[]) =>
      replies.flatMap((r) =>
        r.kind === "tools" ? r.calls.map((c) => ({ tool: c.name, input: c.args })) : [],
      );
    const recorded = (name: string) =>
      messagesOf(session(name))
        .flatMap((m) => m.parts)
        .filter((p) => p.type === "tool")
        .map((p) => ({ tool: p.tool, input: p.state?.input }));
    for (const s of SCENARIOS) {
      expect(recorded(s.name), s.name).toEqual(scripted(s.replies(PROJECT)));
      const children = results.filter((r) => r.parent_id === idOf.get(s.name));
      expect(children.length > 0, s.name).toBe(s.childReplies !== undefined);
      for (const c of children) {
        const name = labelsDoc[c.id]?.scenario as string;
        expect(recorded(name), name).toEqual(
          scripted(s.childReplies?.(PROJECT, firstUserText(session(name))) ?? []),
        );
      }
    }
  });

  test("no machine paths: the project dir is a placeholder; ASCII only", () => {
    for (const f of readdirSync(RECORDED).filter((n) => n.endsWith(".json"))) {
      const text = readFileSync(join(RECORDED, f), "utf8");
      expect(text, f).not.toMatch(/\/tmp\/|\/home\/|\/root\b|\/work\/|stallguard-oc-/);
      expect(
        [...text].every((c) => c.charCodeAt(0) < 128),
        f,
      ).toBe(true);
    }
    expect(sessions.every((s) => s.directory === PROJECT)).toBe(true);
  });
});

describe("recorded corpus with the shipped config", () => {
  test("every recorded loop is flagged", () => {
    const loops = results.filter((r) => labels[r.id] === "loop");
    expect(loops.length).toBeGreaterThanOrEqual(6);
    for (const r of loops) expect(r.worst, `${labelsDoc[r.id]?.scenario}: ${flagged(r)}`).not.toBe("ok");
  });

  test("no recorded healthy session is flagged, at any call", () => {
    const healthy = results.filter((r) => labels[r.id] === "healthy");
    expect(healthy.length).toBeGreaterThanOrEqual(12);
    for (const r of healthy) {
      expect(r.worst, `${labelsDoc[r.id]?.scenario}: ${flagged(r)}`).toBe("ok");
      expect(r.timeline.every((t) => t.verdict === "ok")).toBe(true);
    }
  });

  test("the slow loop (one same-result call every ~12 among novel ones) is caught within 120 calls", () => {
    const r = result("slow-loop");
    expect(r.calls).toBeGreaterThan(300);
    expect(r.landed).toBe(0);
    expect(r.first_flag_call).not.toBeNull();
    expect(r.first_flag_call).toBeLessThanOrEqual(120);
    expect(r.reason).toBe("whole_session");
    // It hides from the window: no 60-call stretch of it holds more than five of the repeats.
    const list = calls("slow-loop");
    const repeats = list.flatMap((c, i) => (c.target === "sh slow/progress.sh" ? [i] : []));
    expect(repeats.length).toBeGreaterThanOrEqual(25);
    expect(repeats.every((at, k) => k < 5 || at - (repeats[k - 5] as number) >= 60)).toBe(true);
    expect(outcomes(list.filter((c) => c.target === "sh slow/progress.sh"))).toBe(1);
  });

  test("two searches going round with the same answers are caught in a row, which the same-call rules miss", () => {
    const r = result("alternation-loop");
    expect(r.landed).toBe(0);
    expect(r.reason).toBe("in_a_row");
    // after the 20 novel reads, the two searches, then row_warn repeats of them in turn
    expect(r.first_flag_call).toBe(20 + 2 + policy.thresholds.row_warn);
    // the cycle rule alone catches it on its cycle_warn-th whole turn
    const off = { row_warn: 1000, row_loop: 1000 };
    const [cycleOnly] = replay([session("alternation-loop")], {
      ...policy,
      thresholds: { ...policy.thresholds, ...off },
    });
    expect(cycleOnly?.reason).toBe("cycle");
    expect(cycleOnly?.first_flag_call).toBe(20 + 2 * policy.thresholds.cycle_warn);
    // each search alone stays under top_warn: without both rules the loop is missed
    const [without] = replay([session("alternation-loop")], {
      ...policy,
      thresholds: { ...policy.thresholds, ...off, cycle_warn: 1000, cycle_loop: 1000 },
    });
    expect(without?.worst).toBe("ok");
  });

  test("a module re-read in the same 12 slices is caught retrace_warn slices into the second pass", () => {
    const r = result("sweep-loop");
    expect(r.landed).toBe(0);
    expect(r.reason).toBe("retrace");
    const slices = calls("sweep-loop").filter((c) => c.target === "sweep/service.py");
    expect(slices).toHaveLength(36);
    expect(new Set(slices.map((c) => c.nfp)).size).toBe(12);
    expect(outcomes(slices)).toBe(12);
    // two novel reads, the first pass of 12, then retrace_warn slices of the second
    expect(r.first_flag_call).toBe(2 + 12 + policy.thresholds.retrace_warn);
    // without the retrace rule the repeat share catches it, later
    const [without] = replay([session("sweep-loop")], {
      ...policy,
      thresholds: { ...policy.thresholds, retrace_warn: 1000, retrace_loop: 1000 },
    });
    expect(without?.reason).toBe("duplicates");
    expect(without?.first_flag_call).toBeGreaterThan(r.first_flag_call as number);
  });

  test("the fast loops are caught early and named by their repeated target", () => {
    const early: Array<[string, number, string]> = [
      ["read-loop", 8, "read src/app.js"],
      // one failing call with one answer: flagged on its top_warn-th run
      ["bash-retry-loop", policy.thresholds.top_warn, "bash sh check.sh"],
      ["test-rerun-loop", 8, "bash make test"],
      ["debug-rerun-loop", 12, "bash sh debug.sh"],
      ["poll-stuck-loop", 8, "bash sh stuck/status.sh"],
    ];
    for (const [name, within, target] of early) {
      const r = result(name);
      expect(r.first_flag_call, name).not.toBeNull();
      expect(r.first_flag_call, name).toBeLessThanOrEqual(within);
      expect(r.top_target, name).toBe(target);
      expect(r.landed, name).toBe(0);
    }
    // The loops repeat one call with one answer: nothing about them changes.
    expect(outcomes(calls("test-rerun-loop").filter((c) => c.effect === "test"))).toBe(1);
    expect(outcomes(calls("poll-stuck-loop"))).toBe(1);
  });
});

describe("why each healthy shape stays ok", () => {
  test("tdd-cycle: every failing run is followed by a landed fix; each failure is a different one", () => {
    const list = calls("tdd-cycle");
    const runs = list.filter((c) => c.effect === "test");
    expect(runs.map((c) => c.failed)).toEqual([true, true, true, true, false]);
    expect(outcomes(runs)).toBe(5);
    expect(landedBetweenEach(list, (c) => c.effect === "test")).toBe(5);
    // Four fixes, the test passing after it failed, the commit.
    expect(result("tdd-cycle").landed).toBe(6);
  });

  test("plan-orchestrator: the same plan read (same answer) six times, a commit landing between each", () => {
    const list = expectRereadsBetweenLandings("plan-orchestrator", "plan/PLAN.md", 6);
    expect(list.filter((c) => c.effect === "commit").every((c) => c.landed)).toBe(true);
    const r = result("plan-orchestrator");
    expect(r.top_target).toBe("read plan/PLAN.md");
    const children = results.filter((c) => c.parent_id === r.id);
    expect(children).toHaveLength(6);
    for (const c of children) {
      expect(c.agent).toBe("general");
      expect(c.landed).toBeGreaterThanOrEqual(1);
    }
  });

  test("central-file: the unchanged registry re-read eight times, an edit of another file landing between", () => {
    expectRereadsBetweenLandings("central-file", "central/registry.js", 8);
    expect(result("central-file").landed).toBe(8);
  });

  test("poll-progress: nothing lands while it polls, but every status answer is new", () => {
    const list = calls("poll-progress");
    const polls = list.filter((c) => c.target === "sh poll/status.sh");
    expect(polls).toHaveLength(12);
    expect(new Set(polls.map((c) => c.nfp)).size).toBe(1);
    expect(outcomes(polls)).toBe(12);
    expect(result("poll-progress").landed).toBe(0);
    // The same session with every status answer made the same: now it is a stuck poll, flagged.
    const s = session("poll-progress");
    const frozen = {
      ...s,
      messages: messagesOf(s).map((m) => ({
        ...m,
        parts: m.parts.map((p) =>
          p.type === "tool" && JSON.stringify(p.state?.input).includes("poll/status.sh")
            ? { ...p, state: { ...p.state, output: "build 7: running, step 1/12 (compiling module 1)\n" } }
            : p,
        ),
      })),
    };
    const [r] = replay([frozen], policy);
    expect(r?.worst).not.toBe("ok");
    // the same poll with the same answer, one after another
    expect(r?.reason).toBe("in_a_row");
  });

  test("bash-editor: edits made only through bash land (sed -i, python, cat >, >>, tee), then the commit", () => {
    const list = calls("bash-editor");
    expect(new Set(list.map((c) => c.tool))).toEqual(new Set(["bash"]));
    const landedTargets = list.filter((c) => c.landed).map((c) => c.target);
    expect(landedTargets).toEqual([
      "sed -i",
      "python3 -",
      "cat <<EOF",
      "echo <text>",
      "tee bashed/app.conf",
      "git add",
    ]);
    expect(landedBetweenEach(list, (c) => c.target === "sh debug.sh")).toBe(5);
    expect(result("bash-editor").landed).toBe(6);
  });

  test("long-refactor: 40+ calls over 17 files, each edit landing", () => {
    const r = result("long-refactor");
    expect(r.calls).toBeGreaterThanOrEqual(40);
    const edits = calls("long-refactor").filter((c) => c.tool === "edit");
    expect(new Set(edits.map((c) => c.target)).size).toBe(17);
    expect(edits.every((c) => c.landed)).toBe(true);
  });

  test("steered: a person's new message starts a new stretch; without it the same calls are flagged", () => {
    const s = session("steered");
    const users = observations(s).filter((o): o is UserObservation => o.kind === "user");
    expect(users).toHaveLength(2);
    expect(users.every((u) => !u.injected)).toBe(true);
    expect(users[0]?.textHash).not.toBe(users[1]?.textHash);
    expect(result("steered").worst).toBe("ok");
    // The same session with the person's second message taken out: the reruns add up.
    let seen = 0;
    const silent = {
      ...s,
      messages: s.messages.filter((m) => (m.info as { role?: string }).role !== "user" || seen++ === 0),
    };
    expect(silent.messages).toHaveLength(s.messages.length - 1);
    const [r] = replay([silent], policy);
    expect(r?.worst).not.toBe("ok");
    expect(["repeat_target", "duplicates"]).toContain(r?.reason);
  });

  test("the first recordings: the fix lands, sliced reads are not duplicates, the child rolls up", () => {
    expect(result("edit-test").landed).toBeGreaterThanOrEqual(3);
    expect(result("sliced-read").dup_share).toBe(0);
    const child = result("sub-agent-child");
    expect(child.parent_id).toBe(result("sub-agent").id);
    expect(child.agent).toBe("general");
    expect(child.landed).toBeGreaterThanOrEqual(1);
  });
});
