// One scripted bash session run twice: live, each command run for real in a
// real git work tree between the plugin's hooks with the real work-tree
// probe (as opencode calls them), and replayed as calibrate replays the
// stored session (command text and answers only). Another writer in the same
// checkout can write between the calls and while one runs. Returns the
// verdict and the landed count after every call on both paths.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { hooksOf } from "../../plugin/_test-hooks.ts";
import { Stallguard } from "../../plugin/runtime.ts";
import { loadSettings } from "../../plugin/settings.ts";
import { WorktreeProbe } from "../../plugin/worktree-probe.ts";
import { type Policy, type ReplaySession, replay, type StoredMessage } from "../../shared/index.ts";

export interface Tick {
  call: number;
  landed: number;
  verdict: string;
}

export interface LandingRun {
  live: Tick[];
  replayed: Tick[];
}

export interface LandingScript {
  files: Record<string, string>;
  commands: string[];
  /** Another process's writes (relative path -> content) before call i, and while call i runs. */
  between?: (i: number) => Record<string, string>;
  during?: (i: number) => Record<string, string>;
}

/** Time enough that a write between two calls is stamped well before the next starts (a model turn is seconds). */
const TURN_GAP_MS = 60;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

function write(dir: string, files: Record<string, string>, append: boolean): void {
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, rel)), { recursive: true });
    writeFileSync(join(dir, rel), content, append ? { flag: "a" } : {});
  }
}

function run(dir: string, command: string): { exit: number; output: string } {
  const r = spawnSync("sh", ["-c", command], { cwd: dir, encoding: "utf8" });
  return { exit: r.status ?? 1, output: `${r.stdout ?? ""}${r.stderr ?? ""}` };
}

/** Runs the script live (real tree, real probe) and through replay; the ticks of both. */
export async function landingSession(script: LandingScript, policy: Policy): Promise<LandingRun> {
  const dir = mkdtempSync(join(tmpdir(), "sg-landing-"));
  const git = (...args: string[]) =>
    execFileSync("git", ["-c", "user.name=t", "-c", "user.email=t@example.invalid", ...args], { cwd: dir });
  try {
    git("init", "-q", "-b", "main");
    write(dir, script.files, false);
    git("add", "-A");
    git("commit", "-q", "-m", "initial");
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    let clock = 1_000_000;
    const probe = new WorktreeProbe({ directory: dir, timeoutMs: 20_000, testPatterns: policy.testPatterns });
    const sg = new Stallguard({
      settings: { ...settings, policy, toasts: false },
      directory: dir,
      now: () => clock,
      fetch: async () => new Response("{}", { status: 200 }),
      probe,
    });
    probe.refresh();
    await probe.idle();
    const id = "ses_landing";
    const messages: StoredMessage[] = [
      { info: { id: "m0", role: "user", time: { created: clock } }, parts: [{ type: "text", text: "go" }] },
    ];
    hooksOf(sg).chatMessage(
      { sessionID: id, agent: "build", messageID: "m0" },
      { message: messages[0]?.info, parts: [] },
    );
    const live: Tick[] = [];
    for (const [i, command] of script.commands.entries()) {
      write(dir, script.between?.(i) ?? {}, true);
      await pause(TURN_GAP_MS);
      clock += 1000;
      await hooksOf(sg).headers({ sessionID: id, agent: "build", model: { id: "m" } }, { headers: {} });
      const input = { tool: "bash", sessionID: id, callID: `c${i}`, args: { command, description: "Run" } };
      await hooksOf(sg).toolBefore(input, { args: input.args });
      // The command starts: the probe's quick look at the call's start has read its times.
      await probe.idle();
      write(dir, script.during?.(i) ?? {}, true);
      const { exit, output } = run(dir, command);
      const metadata = { exit, output, truncated: false };
      hooksOf(sg).toolAfter(input, { title: command, output, metadata });
      await probe.idle();
      await sg.settled();
      const signals = sg.forest.get(id)?.signals();
      live.push({
        call: i + 1,
        landed: signals?.landed ?? 0,
        verdict: sg.forest.get(id)?.lastVerdict.verdict ?? "ok",
      });
      messages.push({
        info: {
          id: `m${i + 1}`,
          role: "assistant",
          agent: "build",
          time: { created: clock, completed: clock },
        },
        parts: [
          {
            type: "tool",
            tool: "bash",
            callID: `c${i}`,
            state: {
              status: "completed",
              input: input.args,
              output,
              metadata,
              time: { start: clock, end: clock },
            },
          },
        ],
      });
    }
    await sg.dispose();
    const session: ReplaySession = { id, parentId: null, directory: dir, messages };
    const [r] = replay([session], policy, { timeline: true });
    let landed = 0;
    const replayed = (r?.timeline ?? []).map((t) => {
      if (t.landed) landed++;
      return { call: t.call, landed, verdict: t.verdict };
    });
    return { live, replayed };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
