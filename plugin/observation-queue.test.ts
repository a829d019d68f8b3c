import { describe, expect, it } from "vitest";
import { hooksOf } from "./_test-hooks.ts";
import { manualTimer } from "./_test-timer.ts";
import { ObservationQueue } from "./observation-queue.ts";
import { type ProbeLike, Stallguard } from "./runtime.ts";
import { loadSettings } from "./settings.ts";
import type { TreeAnswer } from "./worktree-probe.ts";

function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("ObservationQueue", () => {
  it("runs a ready item at once when nothing waits", () => {
    const q = new ObservationQueue({ waitMs: 100, timer: manualTimer().timer });
    const seen: string[] = [];
    q.push(() => seen.push("turn"));
    expect(seen).toEqual(["turn"]);
    expect(q.length).toBe(0);
  });

  it("keeps arrival order behind a slow probe: later calls, turns and usage wait for it", async () => {
    const t = manualTimer();
    const q = new ObservationQueue({ waitMs: 2500, timer: t.timer });
    const seen: string[] = [];
    const probe = deferred<string>();
    q.push(() => seen.push("turn 1"));
    q.pushWaiting(probe.promise, (a) => seen.push(`bash ${a}`));
    q.push(() => seen.push("usage 1"));
    q.push(() => seen.push("read"));
    const second = deferred<string>();
    q.pushWaiting(second.promise, (a) => seen.push(`bash2 ${a}`));
    q.push(() => seen.push("turn 2"));
    expect(seen).toEqual(["turn 1"]);
    expect(q.length).toBe(5);
    // The second probe answers first: still nothing may overtake the first.
    second.resolve("b");
    await Promise.resolve();
    expect(seen).toEqual(["turn 1"]);
    probe.resolve("a");
    await q.drained();
    expect(seen).toEqual(["turn 1", "bash a", "usage 1", "read", "bash2 b", "turn 2"]);
    expect(t.armed).toEqual([]);
  });

  it("waits at most waitMs: then the call is judged without an answer and the rest follows", async () => {
    const t = manualTimer();
    const q = new ObservationQueue({ waitMs: 2500, timer: t.timer });
    const seen: string[] = [];
    const never = new Promise<string>(() => undefined);
    q.pushWaiting(never, (a) => seen.push(`bash ${a}`));
    q.push(() => seen.push("turn"));
    expect(t.armed).toEqual([2500]);
    t.fireAll();
    await q.drained();
    expect(seen).toEqual(["bash null", "turn"]);
  });

  it("a failed answer is no answer; a throwing item is reported and the queue goes on", async () => {
    const errors: unknown[] = [];
    const q = new ObservationQueue({
      waitMs: 100,
      timer: manualTimer().timer,
      onError: (e) => errors.push(e),
    });
    const seen: string[] = [];
    const probe = deferred<string>();
    q.pushWaiting(probe.promise, (a) => seen.push(`bash ${a}`));
    q.push(() => {
      throw new Error("boom");
    });
    q.push(() => seen.push("after"));
    probe.reject(new Error("git died"));
    await q.drained();
    expect(seen).toEqual(["bash null", "after"]);
    expect(errors.map(String)).toEqual(["Error: boom"]);
  });
});

describe("Stallguard behind a slow probe", () => {
  function make(after: () => Promise<TreeAnswer | null>) {
    const t = manualTimer();
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    let clock = 1_000_000;
    const probe: ProbeLike = {
      refresh: () => undefined,
      started: () => undefined,
      ended: () => undefined,
      before: async () => undefined,
      after,
      close: () => undefined,
    };
    const sg = new Stallguard({
      settings: { ...settings, toasts: false },
      directory: "/repo",
      now: () => (clock += 1000),
      fetch: async () => new Response("{}", { status: 200 }),
      probe,
      probeWaitMs: 2500,
      timer: t.timer,
    });
    return { sg, t };
  }
  const bash = (sg: Stallguard, id: string, command: string) =>
    hooksOf(sg).toolAfter(
      { tool: "bash", sessionID: "ses_1", callID: id, args: { command } },
      { title: "", output: "", metadata: { exit: 0, output: "", truncated: false } },
    );
  const turn = (sg: Stallguard) =>
    hooksOf(sg).headers({ sessionID: "ses_1", agent: "build", model: { id: "m" } }, { headers: {} });

  it("tool.execute.after returns at once; the call and everything after it are judged when the probe answers", async () => {
    const answer = deferred<TreeAnswer | null>();
    const { sg } = make(() => answer.promise);
    await turn(sg);
    bash(sg, "c1", "sh bump.sh 2");
    await turn(sg);
    hooksOf(sg).toolAfter(
      { tool: "read", sessionID: "ses_1", callID: "c2", args: { filePath: "/repo/a.py" } },
      { title: "", output: "x", metadata: {} },
    );
    // Returned without waiting: nothing after the bash call is judged yet.
    expect(sg.stats().waiting).toBe(3);
    expect(sg.forest.get("ses_1")?.signals()).toMatchObject({ calls: 0, turns: 1 });
    answer.resolve({ before: "a".repeat(32), after: "b".repeat(32) });
    await sg.settled();
    expect(sg.forest.get("ses_1")?.signals()).toMatchObject({ calls: 2, turns: 2, landed: 1 });
    await sg.dispose();
  });

  it("a probe that never answers holds the verdicts for probeWaitMs only, then the command decides", async () => {
    const { sg, t } = make(() => new Promise(() => undefined));
    await turn(sg);
    bash(sg, "c1", "sh bump.sh 2");
    bash(sg, "c2", "sed -i s/a/b/ app.py");
    expect(t.armed).toEqual([2500, 2500]);
    t.fireAll();
    await sg.settled();
    // Without an answer: `sh bump.sh` is not a write the command shows, `sed -i` is.
    expect(sg.forest.get("ses_1")?.signals()).toMatchObject({ calls: 2, landed: 1 });
    await sg.dispose();
  });
});
