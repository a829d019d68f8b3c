// The work-tree probe on a real git repository made here with real git (and a
// plain directory for the no-git case). Time is driven by hand where a
// timeout is the point; elsewhere the probe's own bound is far away.

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { hooksOf } from "./_test-hooks.ts";
import { manualTimer } from "./_test-timer.ts";
import { Stallguard } from "./runtime.ts";
import { loadSettings } from "./settings.ts";
import { commandPlace, type GitRunner, gitFingerprint, gitRoot, spawnGit } from "./tree-fingerprint.ts";
import { type TreeAnswer, WorktreeProbe } from "./worktree-probe.ts";

let dir: string;
const git = (...args: string[]) =>
  execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", ...args], {
    cwd: dir,
    stdio: "pipe",
  }).toString();
const sh = (command: string) => execFileSync("sh", ["-c", command], { cwd: dir, stdio: "pipe" });

function gitRepo(): void {
  git("init", "-q", "-b", "main");
  writeFileSync(join(dir, "app.py"), "value = 1\n");
  writeFileSync(join(dir, "README.md"), "# demo\n");
  git("add", "-A");
  git("commit", "-q", "-m", "initial");
}

/** A real git runner that counts what it runs. */
function countingGit() {
  const runs: string[] = [];
  const run: GitRunner = (args, cwd, onData, signal) => {
    runs.push(args[0] as string);
    return spawnGit(args, cwd, onData, signal);
  };
  return { run, runs };
}

const fp = () => gitFingerprint(dir, spawnGit, new AbortController().signal);

/** One bash call through the probe, as the plugin makes it: before, the command, after. */
async function bashCall(
  probe: WorktreeProbe,
  id: string,
  command: string,
): Promise<TreeAnswer | null | "skipped"> {
  await probe.before("ses_1", id, command);
  sh(command);
  const answer = probe.after("ses_1", id, command);
  return answer === null ? "skipped" : await answer;
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sg-probe-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe("gitFingerprint", () => {
  it("changes with sed -i and comes back when the edit is reverted", async () => {
    gitRepo();
    const clean = await fp();
    expect(clean).toMatch(/^[0-9a-f]{32}$/);
    expect(await fp()).toBe(clean);
    sh("sed -i 's/value = 1/value = 2/' app.py");
    const edited = await fp();
    expect(edited).not.toBe(clean);
    sh("sed -i 's/value = 2/value = 3/' app.py");
    const again = await fp();
    expect(again).not.toBe(edited);
    expect(again).not.toBe(clean);
    sh("sed -i 's/value = 3/value = 1/' app.py");
    expect(await fp()).toBe(clean);
  });

  it("sees a commit, a new untracked file and a change inside it", async () => {
    gitRepo();
    sh("sed -i 's/1/2/' app.py");
    const edited = await fp();
    git("commit", "-q", "-am", "two");
    const committed = await fp();
    expect(committed).not.toBe(edited);
    writeFileSync(join(dir, "new.py"), "a = 1\n");
    const untracked = await fp();
    expect(untracked).not.toBe(committed);
    writeFileSync(join(dir, "new.py"), "a = 2\n");
    expect(await fp()).not.toBe(untracked);
  });

  it("sees a change inside a changed file, not only that it changed", async () => {
    gitRepo();
    sh("sed -i 's/1/2/' app.py");
    const two = await fp();
    sh("sed -i 's/2/3/' app.py");
    // Same status line (the file is modified either way); the content tells the states apart.
    expect(await fp()).not.toBe(two);
    sh("sed -i 's/3/2/' app.py");
    expect(await fp()).toBe(two);
  });

  it("works before the first commit and says when the directory is not a work tree", async () => {
    git("init", "-q", "-b", "main");
    writeFileSync(join(dir, "a.txt"), "x\n");
    const a = await fp();
    git("add", "a.txt");
    // Staging changes no content: the same state.
    const staged = await fp();
    expect(staged).toBe(a);
    writeFileSync(join(dir, "a.txt"), "y\n");
    expect(await fp()).not.toBe(staged);
    const plain = mkdtempSync(join(tmpdir(), "sg-probe-plain-"));
    try {
      // GIT_CEILING_DIRECTORIES keeps git from finding a repository above the temp dir.
      process.env.GIT_CEILING_DIRECTORIES = tmpdir();
      expect(await gitRoot(plain, spawnGit, new AbortController().signal)).toBe("not-git");
    } finally {
      delete process.env.GIT_CEILING_DIRECTORIES;
      rmSync(plain, { recursive: true, force: true });
    }
  });
});

describe("WorktreeProbe in a git work tree", { timeout: 20_000 }, () => {
  it("answers before/after per bash call; a revert returns to the earlier state", async () => {
    gitRepo();
    const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000 });
    probe.refresh();
    await probe.idle();
    const first = await bashCall(probe, "c1", "sed -i 's/value = 1/value = 2/' app.py");
    const second = await bashCall(probe, "c2", "python3 -c 'pass'");
    const third = await bashCall(probe, "c3", "sed -i 's/value = 2/value = 1/' app.py");
    expect(first).not.toBe("skipped");
    const [a, b, c] = [first, second, third] as [TreeAnswer, TreeAnswer, TreeAnswer];
    expect(a.after).not.toBe(a.before);
    expect(b).toEqual({ before: a.after, after: a.after, changed: [] });
    expect(c).toMatchObject({ before: a.after, after: a.before });
  });

  it("skips a read-only command without running git", async () => {
    gitRepo();
    const g = countingGit();
    const probe = new WorktreeProbe({ directory: dir, run: g.run, timeoutMs: 20_000 });
    expect(await bashCall(probe, "c1", "cat app.py && git status --short && grep -n value app.py")).toBe(
      "skipped",
    );
    expect(await bashCall(probe, "c2", "sed -n 1,5p app.py | head -3")).toBe("skipped");
    expect(g.runs).toEqual([]);
  });

  it("retakes the baseline after an edit tool, so the edit is not credited to the next bash call", async () => {
    gitRepo();
    const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000 });
    probe.refresh();
    await probe.idle();
    // The edit tool writes the file itself, then the plugin refreshes the baseline.
    writeFileSync(join(dir, "app.py"), "value = 5\n");
    probe.refresh();
    // The model's next turn comes after the refresh (a real turn takes far longer).
    await probe.idle();
    const answer = (await bashCall(probe, "c1", "npm --version")) as TreeAnswer;
    expect(answer.after).toBe(answer.before);
  });

  it("gives no answer when another call that may write started while the probe ran", async () => {
    gitRepo();
    const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000 });
    probe.refresh();
    await probe.idle();
    await probe.before("ses_1", "c1", "sed -i s/1/2/ app.py");
    sh("sed -i s/1/2/ app.py");
    const first = probe.after("ses_1", "c1", "sed -i s/1/2/ app.py");
    // Another session's edit starts before the first probe is done: whose change would it see?
    await probe.before("ses_2", "c2", "sed -i s/2/3/ app.py");
    sh("sed -i s/2/3/ app.py");
    const second = probe.after("ses_2", "c2", "sed -i s/2/3/ app.py");
    expect(await first).toBeNull();
    expect(await second).toBeNull();
    expect(probe.stats.busy).toBe(1);
    // The next quiet call answers again, from the state the second probe saw.
    const third = (await bashCall(probe, "c3", "python3 -c pass")) as TreeAnswer;
    expect(third.after).toBe(third.before);
  });

  it("probes the whole work tree from a subdirectory (porcelain paths are relative to the top level)", async () => {
    gitRepo();
    mkdirSync(join(dir, "pkg"));
    writeFileSync(join(dir, "pkg", "new.py"), "a = 1\n");
    const probe = new WorktreeProbe({ directory: join(dir, "pkg"), timeoutMs: 20_000 });
    probe.refresh();
    await probe.idle();
    await probe.before("ses_1", "c1", "sed -i s/1/2/ new.py");
    execFileSync("sh", ["-c", "sed -i s/1/2/ new.py"], { cwd: join(dir, "pkg") });
    const answer = (await probe.after("ses_1", "c1", "sed -i s/1/2/ new.py")) as TreeAnswer;
    expect(answer.after).not.toBe(answer.before);
  });

  it("gives no answer for a command that works outside the directory", async () => {
    gitRepo();
    const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000 });
    probe.refresh();
    expect(await bashCall(probe, "c1", "cd /tmp && python3 -c pass")).toBe("skipped");
    expect(commandPlace("cd src && sed -i s/a/b/ x.py", dir)).toBe("inside");
    expect(commandPlace("git -C ../other apply p.diff", dir)).toBe("unknown");
    expect(commandPlace("sed -i s/a/b/ x.py", dir, "/")).toBe("unknown");
  });

  it("a probe that does not finish in time gives no answer, and git is killed", async () => {
    gitRepo();
    const t = manualTimer();
    let killed = 0;
    const hang: GitRunner = (_args, _cwd, _onData, signal) =>
      new Promise((done) => {
        signal.addEventListener("abort", () => {
          killed++;
          done({ code: null, stderr: "" });
        });
      });
    const probe = new WorktreeProbe({ directory: dir, run: hang, timer: t.timer });
    const answer = probe.after("ses_1", "c1", "sed -i s/1/2/ app.py");
    expect(answer).not.toBeNull();
    await expect.poll(() => t.armed.length).toBe(1);
    t.fireAll();
    expect(await answer).toBeNull();
    expect(killed).toBe(1);
    expect(probe.stats.timeouts).toBe(1);
  });

  it("rests after three timeouts in a row (a tree too big to probe), answering nothing at once", async () => {
    gitRepo();
    const t = manualTimer();
    const hang: GitRunner = (_a, _c, _d, signal) =>
      new Promise((done) => signal.addEventListener("abort", () => done({ code: null, stderr: "" })));
    const probe = new WorktreeProbe({ directory: dir, run: hang, timer: t.timer });
    for (let i = 0; i < 3; i++) {
      const answer = probe.after("ses_1", `c${i}`, "make");
      await expect.poll(() => t.armed.length).toBe(1);
      t.fireAll();
      expect(await answer).toBeNull();
    }
    expect(probe.after("ses_1", "c9", "make")).toBeNull();
    expect(probe.stats.skipped).toBe(1);
  });
});

describe("WorktreeProbe outside git", { timeout: 20_000 }, () => {
  it("compares the files the command names before and after the call", async () => {
    process.env.GIT_CEILING_DIRECTORIES = tmpdir();
    try {
      mkdirSync(join(dir, "src"));
      writeFileSync(join(dir, "src", "app.py"), "value = 1\n");
      const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000 });
      probe.refresh();
      await probe.idle();
      const edit = (await bashCall(probe, "c1", "sed -i 's/1/2/' src/app.py")) as TreeAnswer;
      expect(edit.after).not.toBe(edit.before);
      const same = (await bashCall(probe, "c2", "sed -i 's/9/8/' src/app.py")) as TreeAnswer;
      expect(same.after).toBe(same.before);
      const back = (await bashCall(probe, "c3", "sed -i 's/2/1/' src/app.py")) as TreeAnswer;
      expect(back.after).toBe(edit.before);
      // Names no file: nothing to compare, the core uses its command heuristic.
      expect(await bashCall(probe, "c4", "python3 -c pass")).toBe("skipped");
    } finally {
      delete process.env.GIT_CEILING_DIRECTORIES;
    }
  });

  it("asks git again a while later: after `git init` the whole tree is probed", async () => {
    process.env.GIT_CEILING_DIRECTORIES = tmpdir();
    try {
      let clock = 1_000_000;
      writeFileSync(join(dir, "notes.txt"), "a\n");
      const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000, now: () => clock });
      probe.refresh();
      await probe.idle();
      expect(await bashCall(probe, "c1", "python3 -c pass")).toBe("skipped"); // files mode: names no file
      gitRepo();
      clock += 61_000;
      probe.refresh();
      await probe.idle();
      // a command naming no file now gets a whole-tree answer
      const made = (await bashCall(probe, "c2", "sh -c 'echo x > made.txt'")) as TreeAnswer;
      expect(made).not.toBe("skipped");
      expect(made.after).not.toBe(made.before);
    } finally {
      delete process.env.GIT_CEILING_DIRECTORIES;
    }
  });
});

describe("Stallguard with the probe on a real repository", { timeout: 60_000 }, () => {
  /** Runs each command for real between the hooks, one turn per call, and returns the transitions. */
  async function session(commands: string[], withProbe: boolean) {
    gitRepo();
    writeFileSync(join(dir, "check.sh"), 'grep -q "value = 9" app.py\n');
    writeFileSync(join(dir, "bump.sh"), 'sed -i "s/value = [0-9]*/value = $1/" app.py\n');
    git("add", "-A");
    git("commit", "-q", "-m", "scripts");
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    let clock = 1_000_000;
    const probe = withProbe ? new WorktreeProbe({ directory: dir, timeoutMs: 20_000 }) : null;
    const sg = new Stallguard({
      settings: { ...settings, toasts: false },
      directory: dir,
      now: () => clock,
      fetch: async () => new Response("{}", { status: 200 }),
      probe,
    });
    probe?.refresh();
    await probe?.idle();
    let waitedAfterHook = 0;
    for (const [n, command] of commands.entries()) {
      clock += 1000;
      await hooksOf(sg).headers({ sessionID: "ses_1", agent: "build", model: { id: "m" } }, { headers: {} });
      const input = { tool: "bash", sessionID: "ses_1", callID: `c${n}`, args: { command } };
      await hooksOf(sg).toolBefore(input, { args: input.args });
      let exit = 0;
      try {
        execFileSync("sh", ["-c", command], { cwd: dir, stdio: "pipe" });
      } catch (err) {
        exit = (err as { status: number }).status;
      }
      hooksOf(sg).toolAfter(input, {
        title: command,
        output: "",
        metadata: { exit, output: "", truncated: false },
      });
      // The hook has returned; the call waits for its probe off the tool path.
      if (sg.stats().waiting > 0) waitedAfterHook++;
      // The model's next turn: a real one takes far longer than the probe.
      await probe?.idle();
    }
    await sg.settled();
    const signals = sg.forest.get("ses_1")?.signals();
    const verdicts = sg.transitions.map((t) => t.verdict);
    await sg.dispose();
    return { verdicts, landed: signals?.landed ?? 0, waitedAfterHook };
  }

  const CHECK = "sh check.sh";
  const bumps = (from: number) =>
    Array.from({ length: 8 }, (_, i) => [`sh bump.sh ${from + i}`, CHECK]).flat();

  it("edits the command heuristic cannot see land through the probe; the check reruns are not a loop", async () => {
    // value 2..9, the check after each (it passes once the value is 9).
    const live = await session(bumps(2), true);
    expect(live.verdicts).toEqual([]);
    expect(live.landed).toBe(8);
    expect(live.waitedAfterHook).toBeGreaterThan(0);
  });

  it("without the probe the same session is flagged (what the probe fixes)", async () => {
    const blind = await session(bumps(2), false);
    expect(blind.verdicts).toContain("stalling");
  });

  it("the same failing check rerun with no change is flagged even with the probe", async () => {
    const loop = await session(
      Array.from({ length: 12 }, () => CHECK),
      true,
    );
    expect(loop.verdicts).toContain("stalling");
    expect(loop.landed).toBe(0);
  });
});
