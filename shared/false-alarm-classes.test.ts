// One test per false-alarm class of issue 12 and per signal added for it, on
// values: real ToolCalls built by toToolCall from hook-shaped input, judged by
// the forest the plugin and the calibrator share, with the shipped defaults.
import { describe, expect, it } from "vitest";
import { DIR, policy, Session } from "./_test-session.ts";
import { SessionForest } from "./forest.ts";
import { toToolCall } from "./tool-call.ts";

const t = policy.thresholds;

const FAIL_OUT = "FAILED tests/test_calc.py::test_add - assert 4 == 5\n1 failed in 0.02s";

describe("class 1: repetition and failure streaks do not count across landed changes", () => {
  it("test-edit-test until green: the same failing test between landed edits is never a repeat", () => {
    const s = new Session();
    for (let i = 0; i < 20; i++) {
      s.bash("pytest tests/test_calc.py", 1, FAIL_OUT);
      s.read("calc.py", "def add(a, b):\n    return a - b\n");
      s.edit("calc.py", `return a - b  # ${i}`, `return a - b  # ${i + 1}`);
    }
    expect(s.bash("pytest tests/test_calc.py", 0, "1 passed in 0.01s")?.landed).toBe(true);
    expect(s.flagged).toBe(false);
    // the same calls with no edit between them are a loop
    const stuck = new Session();
    for (let i = 0; i < 20; i++) {
      stuck.bash("pytest tests/test_calc.py", 1, FAIL_OUT);
      stuck.read("calc.py", "def add(a, b):\n    return a - b\n");
    }
    expect(stuck.firstFlag).not.toBeNull();
    expect(stuck.firstFlag as number).toBeLessThanOrEqual(2 * t.top_warn);
  });

  it("a plan-driven orchestrator re-reads its plan before each item and commits each item", () => {
    const s = new Session();
    for (let item = 0; item < 15; item++) {
      s.read(".omo/plans/plan.md", "- [ ] item 1\n- [ ] item 2\n- [ ] item 3");
      s.bash("git status --short", 0, "");
      s.read(`src/item${item}.py`, `# item ${item}`);
      s.edit(`src/item${item}.py`, "pass", `return ${item}`);
      expect(s.bash(`git commit -am 'item ${item}'`, 0, `[main ${item}] item`)?.landed).toBe(true);
    }
    expect(s.flagged).toBe(false);
  });

  it("an orchestrator whose workers land stays ok while it re-checks the same things", () => {
    const forest = new SessionForest(policy);
    const atlas = new Session("atlas", null, forest);
    for (let round = 0; round < 12; round++) {
      const worker = new Session(`w${round}`, "atlas", forest);
      forest.setParent(worker.id, "atlas");
      atlas.read(".omo/boulder.json", '{"status": "in_progress"}');
      atlas.bash("git log --oneline -3", 0, "abc item\ndef item");
      atlas.call("task", { subagent_type: "worker", prompt: "do the next item" }, "done");
      worker.edit(`src/m${round}.py`, "a", "b");
    }
    expect(atlas.flagged).toBe(false);
    expect(forest.get("atlas")?.signals().landed).toBe(0);
  });

  it("a central-file worker revisits one file between edits of others", () => {
    const s = new Session();
    for (let i = 0; i < 25; i++) {
      s.read("src/core.py", "class Core: ...");
      s.edit(`src/mod${i}.py`, "old", "new");
    }
    expect(s.flagged).toBe(false);
  });

  it("a failure streak ends when something lands", () => {
    const s = new Session();
    for (let round = 0; round < 4; round++) {
      for (let i = 0; i < t.fail_warn - 1; i++) s.bash("./mvnw compile", 1, `ERROR attempt ${round}-${i}`);
      s.edit("pom.xml", `v${round}`, `v${round + 1}`);
    }
    expect(s.flagged).toBe(false);
  });
});

describe("class 2: changes made through bash land", () => {
  it("a bash-only editor is never stalled; its debug-script reruns between edits are no repeats", () => {
    const s = new Session();
    const edits = [
      "sed -i 's/return a - b/return a + b/' calc.py",
      "cat <<'EOF' > reproduce.py\nfrom calc import add\nprint(add(2, 3))\nEOF",
      "python3 - <<'PY'\nfrom pathlib import Path\np = Path('calc.py')\np.write_text(p.read_text() + '\\n')\nPY",
      "echo 'VERSION = 2' >> settings.py",
      "printf 'x\\n' | tee notes.txt",
    ];
    for (let i = 0; i < 30; i++) {
      s.bash("python reproduce.py", 1, "Traceback: AssertionError");
      s.bash("grep -n add calc.py", 0, "1:def add(a, b):");
      const e = s.bash(`${edits[i % edits.length]} # ${i}`, 0, "");
      expect(e?.landed).toBe(true);
    }
    expect(s.flagged).toBe(false);
  });

  it("the same write command again is not new progress", () => {
    const s = new Session();
    expect(s.bash("sed -i 's/a/b/' x.py", 0, "")?.landed).toBe(true);
    const again = s.bash("sed -i 's/a/b/' x.py", 0, "");
    expect([again?.landed, again?.reverted]).toEqual([false, true]);
  });

  it("a failing write command does not land", () => {
    const s = new Session();
    expect(s.bash("sed -i 's/a/b/' missing.py", 2, "sed: can't read missing.py")?.landed).toBe(false);
  });

  it("the live work-tree probe wins over the command text, and a return to an earlier state is a revert", () => {
    const s = new Session();
    const probe = (command: string, before: string, after: string) => {
      const call = toToolCall(
        {
          tool: "bash",
          callId: `p${before}${after}`,
          args: { command },
          metadata: { exit: 0 },
          status: "completed",
        },
        {
          sessionId: "s",
          parentId: null,
          agent: "build",
          time: 1,
          directory: DIR,
          testPatterns: policy.testPatterns,
          worktree: { before, after },
        },
      );
      return s.forest.observe({ kind: "tool", call }).event;
    };
    expect(probe("make generate", "w0", "w1")?.landed).toBe(true); // no write form, but the tree changed
    expect(probe("sed -i 's/x/x/' a.py", "w1", "w1")?.landed).toBe(false); // a write form that changed nothing
    expect(probe("./apply-fix.sh", "w1", "w2")?.landed).toBe(true);
    const back = probe("git checkout -- .", "w2", "w0");
    expect([back?.landed, back?.reverted]).toEqual([false, true]);
  });
});

describe("class 4: a real user message starts a new stretch; injected turns keep counting", () => {
  // one read short of every rule on the same call (in a row and in the window)
  const loopOnce = (s: Session) => {
    for (let i = 0; i < Math.min(t.top_warn, t.row_warn + 1) - 1; i++) s.read("navbar.js", "const nav = 1;");
  };

  it("a person who steers resets the evidence", () => {
    const s = new Session();
    loopOnce(s);
    s.user("look at the router instead");
    loopOnce(s);
    expect(s.flagged).toBe(false);
  });

  it("an injected continuation, or the same nudge typed again, does not", () => {
    for (const sameNudge of [false, true]) {
      const s = new Session();
      if (sameNudge) s.user("continue"); // the first time it is news
      s.read("navbar.js", "const nav = 1;");
      s.user("continue", !sameNudge);
      loopOnce(s);
      expect(s.flagged).toBe(true);
    }
  });
});

describe("class 5 and the outcome-aware signals", () => {
  it("four turns without a landing and a few repeats are not a stall", () => {
    const s = new Session();
    for (let i = 0; i < 4; i++) s.read("a.py", "same");
    for (let i = 0; i < 4; i++) s.read(`b${i}.py`, `other ${i}`);
    expect(s.flagged).toBe(false);
  });

  it("the same call with the same result is strong evidence: flagged at row_warn repeats in a row", () => {
    const s = new Session();
    for (let i = 0; i < t.top_warn + 2; i++) s.bash("cat .omo/boulder.json", 0, '{"status": "completed"}');
    expect(s.firstFlag).toBe(t.row_warn + 1);
    expect(s.firstFlag).toBeLessThan(t.top_warn + 1);
  });

  it("the same call with a changing result (polling) is weak: not flagged where the same result would be", () => {
    const s = new Session();
    const states = ["queued", "in_progress", "in_progress: build", "in_progress: test", "completed"];
    for (let i = 0; i < t.top_warn + 3; i++)
      s.bash("gh run view 123 --json status", 0, `status: ${states[Math.min(i, 4)]} step ${"abcdefghij"[i]}`);
    expect(s.flagged).toBe(false);
  });

  it("weak repeats count a quarter: polling that keeps moving never reaches the repeat share alone", () => {
    const s = new Session();
    for (let i = 0; i < 200; i++)
      s.bash("gh run view 123 --json status", 0, `status: in_progress, step ${i}a`);
    const sig = s.forest.get("s")?.signals();
    expect(sig?.sameShare).toBe(0);
    expect(sig?.repeatShare).toBeCloseTo((sig?.ndupShare ?? -1) / 4, 10);
    expect(sig?.repeatShare).toBeLessThan(t.dup_warn);
    expect(s.flagged).toBe(false);
  });

  it("three calls going round with the same answers are a cycle; with changing answers, or across a landing, not", () => {
    const usage = "Usage: search_file <search_term> [<file>]";
    const stuck = new Session();
    stuck.read("a.py", "one");
    for (let i = 0; i < 20; i++) stuck.read(`other${i}.py`, "x");
    for (let i = 0; i < t.cycle_warn; i++) {
      stuck.call("grep", { pattern: "_skip", path: "a.py" }, usage, { status: "error" });
      stuck.call("grep", { pattern: "_skip", path: `${DIR}/src/a.py` }, "Found 5 matches");
      stuck.read("src/a.py", "def _skip(): pass");
    }
    expect(stuck.firstFlag).toBe(21 + 3 * t.cycle_warn);
    expect(stuck.forest.get("s")?.lastVerdict.reason).toBe("cycle");
    // each call alone stays under top_warn: the cycle is what flags it
    expect(t.cycle_warn).toBeLessThan(t.top_warn);
    // polling three status commands while a build moves: the answers change, no cycle
    const polling = new Session();
    for (let i = 0; i < 3 * t.cycle_warn; i++) {
      polling.bash("sh ci/status.sh", 0, `step ${i}/40`);
      polling.bash("tail -n 1 build.log", 0, `compiling module ${i}`);
      polling.read("build.log", `line ${i}`);
    }
    expect(polling.flagged).toBe(false);
    // the same pair between landed edits: every edit starts a new stretch
    const working = new Session();
    for (let i = 0; i < 3 * t.cycle_warn; i++) {
      working.bash("pytest -q", 1, FAIL_OUT);
      working.read("calc.py", "def add(a, b):\n    return a - b\n");
      working.edit("calc.py", `# ${i}`, `# ${i + 1}`);
    }
    expect(working.flagged).toBe(false);
  });

  it("the spec's slow loop (one call every 12th among novel ones, nothing landed) is caught within 120 calls", () => {
    const s = new Session();
    for (let i = 1; i <= 320; i++) {
      if (i % 12 === 0) s.bash("cat .omo/boulder.json", 0, '{"status": "completed"}');
      else s.read(`src/f${i}.py`, `file ${i}`);
    }
    expect(s.firstFlag).not.toBeNull();
    expect(s.firstFlag as number).toBeLessThanOrEqual(120);
  });
});
