import { describe, expect, it } from "vitest";
import { configSchema, type Thresholds } from "./config.ts";
import { SessionForest, type VerdictChange } from "./forest.ts";
import { sha256 } from "./hash.ts";
import { type Policy, policyFromConfig } from "./policy.ts";
import type { SessionTracker } from "./session-tracker.ts";
import { type CallContext, type RawToolCall, toToolCall } from "./tool-call.ts";
import type { ToolEvent } from "./types.ts";

const DIR = "/home/dev/repo";
function policyWith(t: Partial<Thresholds> = {}): Policy {
  const p = policyFromConfig(configSchema.parse({}));
  return { ...p, thresholds: { ...p.thresholds, ...t } };
}

function diff(file: string, minus: string[], plus: string[]): string {
  return [
    `Index: ${DIR}/${file}`,
    "===================================================================",
    `--- ${DIR}/${file}`,
    `+++ ${DIR}/${file}`,
    `@@ -1,${minus.length} +1,${plus.length} @@`,
    ...minus.map((l) => `-${l}`),
    ...plus.map((l) => `+${l}`),
    "",
  ].join("\n");
}

/** Drives one session through a tracker (or a forest), one call at a time. */
class Driver {
  time = 1_000;
  n = 0;
  readonly events: ToolEvent[] = [];
  readonly changes: VerdictChange[] = [];
  readonly forest: SessionForest;
  constructor(
    readonly policy: Policy = policyWith(),
    readonly sessionId = "ses_w",
    readonly agent = "build",
  ) {
    this.forest = new SessionForest(policy);
  }
  raw(
    tool: string,
    args: unknown,
    metadata: unknown,
    status: RawToolCall["status"] = "completed",
    extra: Partial<CallContext> = {},
  ) {
    this.time += 1000;
    const call = toToolCall(
      { tool, callId: `c${++this.n}`, args, metadata, status },
      {
        sessionId: this.sessionId,
        parentId: null,
        agent: this.agent,
        time: this.time,
        directory: DIR,
        testPatterns: this.policy.testPatterns,
        ...extra,
      },
    );
    const r = this.forest.observe({ kind: "tool", call });
    this.changes.push(...r.changes);
    this.events.push(r.event as ToolEvent);
    return r.event as ToolEvent;
  }
  edit(file: string, from: string, to: string, d = diff(file, [from], [to])) {
    return this.raw("edit", { filePath: `${DIR}/${file}`, oldString: from, newString: to }, { diff: d });
  }
  write(file: string, content: string, exists: boolean | null = true, extra: Partial<CallContext> = {}) {
    const meta = exists === null ? {} : { exists, filepath: `${DIR}/${file}` };
    return this.raw("write", { filePath: `${DIR}/${file}`, content }, meta, "completed", extra);
  }
  bash(command: string, exit: number) {
    return this.raw("bash", { command, description: "x" }, { exit, output: "", truncated: false });
  }
  read(file: string, offset?: number) {
    return this.raw(
      "read",
      { filePath: `${DIR}/${file}`, ...(offset !== undefined ? { offset, limit: 100 } : {}) },
      {},
    );
  }
  get tracker(): SessionTracker {
    return this.forest.get(this.sessionId) as SessionTracker;
  }
  get verdict() {
    return this.tracker.lastVerdict;
  }
}

describe("landed: edits, writes and patches", () => {
  it("an edit with a non-empty diff lands; an empty or blank diff, or an error, does not", () => {
    const d = new Driver();
    expect(d.edit("a.py", "x = 1", "x = 2").landed).toBe(true);
    expect(d.raw("edit", { filePath: "a.py", oldString: "a", newString: "a" }, { diff: "" }).landed).toBe(
      false,
    );
    expect(d.raw("edit", { filePath: "a.py", oldString: "a", newString: "b" }, { diff: "  \n" }).landed).toBe(
      false,
    );
    expect(d.raw("edit", { filePath: "a.py", oldString: "q", newString: "r" }, {}).landed).toBe(false);
    expect(
      d.raw(
        "edit",
        { filePath: "a.py", oldString: "q", newString: "r" },
        { diff: diff("a.py", ["q"], ["r"]) },
        "error",
      ).landed,
    ).toBe(false);
    expect(d.tracker.signals().landed).toBe(1);
  });

  it("apply_patch with a diff lands, without one does not", () => {
    const d = new Driver();
    const text = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch";
    expect(
      d.raw("apply_patch", { patchText: text }, { diff: diff("a.py", ["x"], ["y"]), files: [] }).landed,
    ).toBe(true);
    expect(d.raw("apply_patch", { patchText: text.replace("+y", "+z") }, { diff: "" }).landed).toBe(false);
  });

  it("a write that changed content lands; writing identical content again does not", () => {
    const d = new Driver();
    expect(d.write("new.py", "print(1)\n", false).landed).toBe(true);
    expect(d.write("new.py", "print(1)\n").landed).toBe(false);
    expect(d.write("new.py", "print(2)\n").landed).toBe(true);
    expect(d.write("other.py", "print(2)\n", null).landed).toBe(true);
  });

  it("uses the sensor's prior content hash when it has one", () => {
    const d = new Driver();
    const content = "same\n";
    expect(d.write("k.py", content, true, { writePrior: sha256(content) }).landed).toBe(false);
    expect(d.write("k.py", "changed\n", true, { writePrior: sha256(content) }).landed).toBe(true);
  });
});

describe("landed: commits", () => {
  it("git commit and --amend land with exit 0, never with a non-zero exit", () => {
    const d = new Driver();
    expect(d.bash("git commit -m 'fix'", 1).landed).toBe(false);
    expect(d.bash("git commit -m 'fix'", 0).landed).toBe(true);
    expect(d.bash("git commit --amend --no-edit", 0).landed).toBe(true);
    expect(d.bash("git commit --amend --no-edit", 128).landed).toBe(false);
    expect(d.bash("cd repo && git add -p && git commit -m x", 0).landed).toBe(true);
    expect(d.bash("git status", 0).landed).toBe(false);
    expect(d.bash("git log -1", 0).landed).toBe(false);
  });
});

describe("landed: tests that pass after failing", () => {
  it("a pass after the same fingerprint last failed lands; a first pass or a passing-again does not", () => {
    const d = new Driver();
    expect(d.bash("pytest tests/test_a.py", 0).landed).toBe(false); // first pass, no prior fail
    expect(d.bash("pytest tests/test_a.py", 0).landed).toBe(false); // passing again
    expect(d.bash("pytest tests/test_a.py", 1).landed).toBe(false); // failing
    expect(d.bash("pytest tests/test_a.py", 1).landed).toBe(false); // failing again
    expect(d.bash("pytest tests/test_a.py", 0).landed).toBe(true); // fixed
    expect(d.bash("pytest tests/test_a.py", 0).landed).toBe(false); // passing again
  });

  it("needs the same fingerprint: a different test passing after another failed is not a fix", () => {
    const d = new Driver();
    d.bash("pytest tests/test_a.py", 1);
    expect(d.bash("pytest tests/test_b.py", 0).landed).toBe(false);
    expect(d.bash("pytest tests/test_a.py -x", 0).landed).toBe(false);
    expect(d.bash("pytest tests/test_a.py", 0).landed).toBe(true);
  });

  it("a non-test command passing after failing is not progress", () => {
    const d = new Driver();
    d.bash("python3 reproduce.py", 1);
    expect(d.bash("python3 reproduce.py", 0).landed).toBe(false);
  });
});

describe("not progress", () => {
  it("reads, greps, globs, todo writes, task dispatches, fetches and lists never land", () => {
    const d = new Driver();
    const events = [
      d.read("a.py"),
      d.raw("grep", { pattern: "x", path: "src" }, { matches: 3 }),
      d.raw("glob", { pattern: "**/*.py" }, { count: 3 }),
      d.raw("todowrite", { todos: [{ content: "x", status: "completed" }] }, { todos: [] }),
      d.raw(
        "task",
        { subagent_type: "general", prompt: "p", description: "d" },
        { sessionId: "ses_child", diff: "-a\n+b" },
      ),
      d.raw("webfetch", { url: "https://example.com" }, {}),
      d.raw("list", { path: "." }, {}),
      d.bash("ls -la", 0),
    ];
    expect(events.map((e) => e.landed)).toEqual(events.map(() => false));
    expect(d.tracker.signals().callsSinceLanded).toBe(events.length);
  });

  it("landing resets the since-landed counters", () => {
    const d = new Driver();
    for (let i = 0; i < 5; i++) d.read("a.py", i * 100);
    expect(d.tracker.signals().callsSinceLanded).toBe(5);
    d.edit("a.py", "a", "b");
    const s = d.tracker.signals();
    expect(s.callsSinceLanded).toBe(0);
    expect(s.lastLandedAt).toBe(d.time);
  });
});

describe("flip-flop: changes that undo or repeat an earlier change", () => {
  it("A->B then B->A repeatedly is caught: flip_flops grows and the verdict flags flip_flop", () => {
    const d = new Driver();
    const landed: boolean[] = [];
    const flips: number[] = [];
    for (let i = 0; i < 8; i++) {
      const e = i % 2 === 0 ? d.edit("app.py", "A", "B") : d.edit("app.py", "B", "A");
      landed.push(e.landed);
      flips.push(d.tracker.signals().flipFlops);
    }
    expect(landed).toEqual([true, false, false, false, false, false, false, false]);
    expect(flips).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(d.events.filter((e) => e.reverted)).toHaveLength(7);
    // flagged: as flip-flops, or first as the same (two) edits with the same results again and again
    const flagged = d.changes.find((c) => c.verdict !== "ok");
    expect(["flip_flop", "repeat_target", "in_a_row"]).toContain(flagged?.reason);
    expect(d.verdict.verdict).not.toBe("ok");
  });

  it("a reverse edit described only by old/new strings (no parsable diff) is caught too", () => {
    const d = new Driver();
    const e1 = d.raw("edit", { filePath: "a.py", oldString: "A", newString: "B" }, { diff: "changed" });
    const e2 = d.raw("edit", { filePath: "a.py", oldString: "B", newString: "A" }, { diff: "changed" });
    expect([e1.landed, e2.landed, e2.reverted]).toEqual([true, false, true]);
  });

  it("a write flip-flopping between two contents is caught", () => {
    const d = new Driver();
    const out = [
      d.write("c.json", "v1", false),
      d.write("c.json", "v2"),
      d.write("c.json", "v1"),
      d.write("c.json", "v2"),
    ];
    expect(out.map((e) => e.landed)).toEqual([true, true, false, false]);
    expect(out.map((e) => e.reverted)).toEqual([false, false, true, true]);
  });

  it("an undone change is no progress however long after the original, and it flags nothing alone", () => {
    const d = new Driver(policyWith({ window: 10 }));
    expect(d.edit("a.py", "A", "B").landed).toBe(true);
    for (let i = 0; i < 30; i++) d.read(`f${i}.py`);
    const undo = d.edit("a.py", "B", "A");
    expect([undo.landed, undo.reverted]).toEqual([false, true]);
    expect(d.verdict.verdict).toBe("ok");
  });

  it("a normal edit-test-fix cycle is never flagged", () => {
    const d = new Driver();
    for (let feature = 0; feature < 12; feature++) {
      d.read(`src/mod${feature}.py`);
      d.edit(`src/mod${feature}.py`, `def f${feature}(): pass`, `def f${feature}(): return 1`);
      expect(d.bash(`pytest tests/test_mod${feature}.py`, 1).landed).toBe(false);
      d.read(`src/mod${feature}.py`, 0);
      d.edit(`src/mod${feature}.py`, `return 1`, `return ${feature + 2}`);
      expect(d.bash(`pytest tests/test_mod${feature}.py`, 0).landed).toBe(true);
      if (feature % 3 === 2) expect(d.bash(`git commit -am 'feature ${feature}'`, 0).landed).toBe(true);
    }
    expect(d.changes.filter((c) => c.verdict !== "ok")).toEqual([]);
    expect(d.tracker.signals().flipFlops).toBe(0);
    expect(d.events.filter((e) => e.reverted)).toHaveLength(0);
  });
});

describe("landed: the live probe's answer for a bash call", () => {
  const probed = (d: Driver, command: string, before: string, after: string, changed: string[]) =>
    d.raw("bash", { command, description: "x" }, { exit: 0, output: "", truncated: false }, "completed", {
      worktree: { before, after, changed },
    });

  it("a new project state lands, an earlier one is a revert, no change is nothing", () => {
    const d = new Driver();
    expect(probed(d, "sh bump.sh 2", "s0", "s1", ["p1"]).landed).toBe(true);
    expect(probed(d, "sh check.sh", "s1", "s1", []).landed).toBe(false);
    const back = probed(d, "sh bump.sh 1", "s1", "s0", ["p1"]);
    expect([back.landed, back.reverted]).toEqual([false, true]);
  });

  it("a rerun that only rewrote what the same command changed last time is no progress; a commit always is", () => {
    const d = new Driver();
    expect(probed(d, "sh gen.sh", "s0", "s1", ["result"]).landed).toBe(true);
    expect(probed(d, "sh gen.sh", "s1", "s2", ["result"]).landed).toBe(false);
    // The same command writing a new file as well is new progress.
    expect(probed(d, "sh gen.sh", "s2", "s3", ["result", "other"]).landed).toBe(true);
    // An authoring command rerun is a revert, as replay judges the same command again.
    expect(probed(d, "echo x >> notes.md", "s3", "s4", ["notes"]).landed).toBe(true);
    expect(probed(d, "echo x >> notes.md", "s4", "s5", ["notes"]).reverted).toBe(true);
    const commit = "git commit -qam wip";
    expect(probed(d, commit, "s5", "s6", ["HEAD"]).landed).toBe(true);
    expect(probed(d, commit, "s6", "s7", ["HEAD"]).landed).toBe(true);
  });

  it("a test command's pass after a fail lands even when the probe saw nothing change", () => {
    const d = new Driver();
    expect(d.bash("npm test", 1).landed).toBe(false);
    expect(probed(d, "npm test", "s0", "s0", []).landed).toBe(true);
  });

  it("without the probe, an edit beside a test run lands on exit 0 (replay reads the edit from the text)", () => {
    const d = new Driver();
    expect(d.bash("sed -i s/a/b/ src/x.py && npm test > out.txt", 0).landed).toBe(true);
    expect(d.bash("npm test > out.txt", 0).landed).toBe(false);
    expect(d.bash("python repro.py > result.txt", 0).landed).toBe(false);
  });
});
