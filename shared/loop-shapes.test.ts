// The slow loop shapes of issue 20 on values, through the forest the plugin
// and the calibrator share, with the shipped defaults: two calls alternating
// with the same answers, and sweeps of 6 to 17 views re-read in the same
// order with the same answers. Each is flagged within a few calls of the
// point where it can be told from work (the third call of an alternation,
// the first call of a sweep's second pass); the healthy look-alikes are not.
import { describe, expect, it } from "vitest";
import { policy, Session } from "./_test-session.ts";
import { SessionForest } from "./forest.ts";

const t = policy.thresholds;
const USAGE = "Usage: search_file <search_term> [<file>]";

/** Novel work, then a landed edit: the stretch the loop starts in. */
function worked(s: Session): number {
  for (let i = 0; i < 12; i++) s.read(`src/mod${i}.py`, `module ${i}`);
  s.edit("src/app.py", "old", "new");
  return 13;
}

const lines = (i: number) => `lines ${i * 40}-${i * 40 + 39}`;

/** One view: a file read at an offset, with its answer. */
function view(s: Session, i: number, answer = lines(i)) {
  s.call("read", { filePath: "/home/dev/repo/src/big.py", offset: i * 40, limit: 40 }, answer);
}

/** One pass of a sweep: n views, each with its own answer. */
function pass(s: Session, n: number, answer = lines) {
  for (let i = 0; i < n; i++) view(s, i, answer(i));
}

const reasonOf = (s: Session) => s.forest.get(s.id)?.lastVerdict.reason;

describe("two calls alternating with the same answers", () => {
  it("are flagged at row_warn repeats: the seventh call of the alternation, not its tenth", () => {
    const s = new Session();
    const start = worked(s) + 1;
    for (let i = 0; i < 10; i++) {
      s.call("grep", { pattern: "_skipNulls", path: "Ser.java" }, USAGE, { status: "error" });
      s.call("grep", { pattern: "_skipNulls", path: "/home/dev/repo/src/Ser.java" }, "Found 5 matches");
    }
    expect(s.firstFlag).toBe(start + 2 + t.row_warn - 1);
    expect(reasonOf(s)).toBe("in_a_row");
    // the cycle rule alone would wait for cycle_warn whole turns
    expect((s.firstFlag as number) - start + 1).toBeLessThan(2 * t.cycle_warn);
  });

  it("a check that alternates twice and moves on is work (a listing and a read, five calls)", () => {
    const s = new Session();
    worked(s);
    for (let i = 0; i < 2; i++) {
      s.bash("ls -a", 0, ".\n..\nreproduce.sh");
      s.read("reproduce.sh", "#!/bin/sh\npython -m pytest");
    }
    s.bash("ls -a", 0, ".\n..\nreproduce.sh");
    s.bash("rm reproduce.sh", 0, "");
    for (let i = 0; i < 6; i++) s.read(`src/next${i}.py`, `next ${i}`);
    expect(s.flagged).toBe(false);
  });
});

describe("sweeps of 6 to 17 views re-read in the same order with the same answers", () => {
  for (const n of [6, 9, 12, 17]) {
    it(`a sweep of ${n} views is flagged retrace_warn calls into its second pass`, () => {
      const s = new Session();
      const start = worked(s) + 1;
      pass(s, n);
      pass(s, n);
      expect(s.firstFlag).toBe(start + n + t.retrace_warn - 1);
      expect(reasonOf(s)).toBe("retrace");
      const sig = s.forest.get(s.id)?.signals();
      expect(sig?.retrace).toMatchObject({ period: n, distinct: n, calls: n });
    });
  }

  it("three different calls taken in turn three times is not a retrace (the peers call it work)", () => {
    const s = new Session();
    worked(s);
    for (let round = 0; round < 3; round++) pass(s, 3);
    expect(s.flagged).toBe(false);
  });

  it("views re-read out of order, or a few picked out of a longer stretch, are not", () => {
    const shuffled = new Session();
    worked(shuffled);
    pass(shuffled, 8);
    for (const i of [3, 0, 6, 1]) view(shuffled, i);
    expect(shuffled.forest.get(shuffled.id)?.signals().retrace).toBeNull();
    expect(shuffled.flagged).toBe(false);
    // a real run's shape (ses_c2_059): four views re-read in their first order, with gaps between them first
    const gapped = new Session();
    worked(gapped);
    for (const i of [0, 1, 2, 3, 4, 5, 6, 7]) view(gapped, i);
    for (const i of [1, 3, 4, 6]) view(gapped, i);
    for (let i = 0; i < 4; i++) gapped.read(`src/other${i}.py`, `other ${i}`);
    expect(gapped.flagged).toBe(false);
  });

  it("answers that change between passes (the file is being written) are not the same sweep", () => {
    const s = new Session();
    worked(s);
    for (let round = 0; round < 3; round++) pass(s, 9, (i) => `view ${i} as of write ${round}`);
    expect(s.flagged).toBe(false);
  });

  it("passes separated by landed edits are work: every landing starts a new stretch", () => {
    const s = new Session();
    worked(s);
    for (let round = 0; round < 4; round++) {
      pass(s, 9);
      s.edit("src/big.py", `v${round}`, `v${round + 1}`);
    }
    expect(s.flagged).toBe(false);
  });
});

describe("read-only agents and rolled-up children", () => {
  it("a read-only agent redoing its sweep is warned, at the workers' looping level, never looping", () => {
    const s = new Session("explorer", null, undefined, "explore");
    pass(s, 12);
    pass(s, 12);
    pass(s, 12);
    expect(s.firstFlag).toBe(12 + t.retrace_loop);
    expect(reasonOf(s)).toBe("retrace");
    expect(s.verdicts).not.toContain("looping");
  });

  it("a worker's retrace flags the worker; its parent's own sweep after the worker landed starts afresh", () => {
    const forest = new SessionForest(policy);
    const root = new Session("root", null, forest);
    const worker = new Session("w", "root", forest);
    pass(root, 9);
    worker.edit("src/fix.py", "a", "b");
    pass(root, 9);
    expect(root.flagged).toBe(false);
    worked(worker);
    pass(worker, 9);
    pass(worker, 9);
    expect(worker.flagged).toBe(true);
    expect(reasonOf(worker)).toBe("retrace");
  });
});
