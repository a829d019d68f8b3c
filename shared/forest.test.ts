import { describe, expect, it } from "vitest";
import { configSchema } from "./config.ts";
import { SessionForest, type VerdictChange } from "./forest.ts";
import { policyFromConfig } from "./policy.ts";
import { type RawToolCall, toToolCall } from "./tool-call.ts";
import type { Observation } from "./types.ts";

const policy = policyFromConfig(configSchema.parse({}));
const t = policy.thresholds;

let clock = 0;
const tick = () => {
  clock += 10;
  return clock;
};
function tool(
  sessionId: string,
  parentId: string | null,
  name: string,
  args: unknown,
  metadata: unknown = {},
  agent = "build",
  status: RawToolCall["status"] = "completed",
): Observation {
  clock += 1000;
  return {
    kind: "tool",
    call: toToolCall(
      { tool: name, callId: `c${clock}`, args, metadata, status },
      { sessionId, parentId, agent, time: clock, directory: "/r", testPatterns: policy.testPatterns },
    ),
  };
}
const read = (s: string, p: string | null, file: string, agent = "build") =>
  tool(s, p, "read", { filePath: `/r/${file}` }, {}, agent);
const edit = (s: string, p: string | null, file: string, a: string, b: string) =>
  tool(
    s,
    p,
    "edit",
    { filePath: `/r/${file}`, oldString: a, newString: b },
    { diff: `--- ${file}\n+++ ${file}\n-${a}\n+${b}\n` },
  );
const turn = (sessionId: string, parentId: string | null, agent = "build"): Observation => ({
  kind: "turn",
  sessionId,
  parentId,
  agent,
  time: tick(),
});
const usage = (sessionId: string, messageId: string, costUsd: number): Observation => ({
  kind: "usage",
  sessionId,
  messageId,
  time: tick(),
  costUsd,
  promptTokens: 1000,
  contextTokens: 1000,
});

function collect(forest: SessionForest, obs: Observation[]): VerdictChange[] {
  return obs.flatMap((o) => forest.observe(o).changes);
}

describe("roll-up of children into ancestors", () => {
  it("a child's landed change resets its parent's and grandparent's since-landed", () => {
    const f = new SessionForest(policy);
    f.setParent("child", "mid");
    f.setParent("mid", "root");
    collect(f, [turn("root", null, "atlas"), turn("mid", "root"), turn("child", "mid")]);
    collect(f, [turn("root", null, "atlas"), turn("root", null, "atlas")]);
    expect(f.get("root")?.signals().turnsSinceLanded).toBe(5);
    collect(f, [edit("child", "mid", "a.py", "x", "y")]);
    expect(f.get("root")?.signals().turnsSinceLanded).toBe(0);
    expect(f.get("mid")?.signals().turnsSinceLanded).toBe(0);
    expect(f.get("root")?.signals().lastLandedAt).toBe(clock);
    // the parent's own landing does not reset the child
    collect(f, [turn("child", "mid"), edit("root", null, "plan.md", "a", "b")]);
    expect(f.get("child")?.signals().turnsSinceLanded).toBe(1);
  });

  it("child turns and spend count for every ancestor", () => {
    const f = new SessionForest(policy);
    collect(f, [turn("root", null), turn("kid", "root"), turn("grandkid", "kid")]);
    collect(f, [
      turn("grandkid", "kid"),
      usage("grandkid", "m1", 0.4),
      usage("grandkid", "m1", 0.4),
      usage("kid", "m2", 0.1),
    ]);
    const root = f.get("root")?.signals();
    expect(root?.turnsSinceLanded).toBe(4);
    expect(root?.turns).toBe(1);
    expect(root?.usdSinceLanded).toBeCloseTo(0.5, 10);
    expect(f.get("kid")?.signals().usdSinceLanded).toBeCloseTo(0.5, 10);
    expect(f.get("grandkid")?.signals().usdSinceLanded).toBeCloseTo(0.4, 10);
  });

  it("an orchestrator that re-checks things (about 11% duplicates) but lands through workers stays ok", () => {
    const f = new SessionForest(policy);
    const changes: VerdictChange[] = [];
    for (let round = 0; round < 120; round++) {
      const worker = `w${round}`;
      f.setParent(worker, "atlas");
      changes.push(
        ...collect(f, [
          turn("atlas", null, "atlas"),
          read("atlas", null, `.omo/plans/p${round}.md`, "atlas"),
        ]),
      );
      changes.push(
        ...collect(f, [
          turn("atlas", null, "atlas"),
          tool("atlas", null, "task", { subagent_type: "worker", prompt: `${round}` }, {}, "atlas"),
        ]),
      );
      for (let k = 0; k < 3; k++)
        changes.push(...collect(f, [turn(worker, "atlas"), read(worker, "atlas", `src/m${round}_${k}.py`)]));
      changes.push(
        ...collect(f, [turn(worker, "atlas"), edit(worker, "atlas", `src/m${round}.py`, "a", `b${round}`)]),
      );
      // the orchestrator's recurring checks, rotated: a repeat about every 8 of its calls
      if (round % 2 === 0) {
        const check = [
          tool("atlas", null, "bash", { command: "git log --oneline -5" }, { exit: 0 }, "atlas"),
          tool("atlas", null, "bash", { command: "git status --short" }, { exit: 0 }, "atlas"),
          read("atlas", null, ".omo/boulder.json", "atlas"),
          tool("atlas", null, "todoread", {}, {}, "atlas"),
        ][(round / 2) % 4] as Observation;
        changes.push(...collect(f, [turn("atlas", null, "atlas"), check]));
      }
    }
    const atlas = f.get("atlas")?.signals();
    // its checks repeat over the session (about 11% of its calls), nothing landed by itself...
    const repeats = (atlas?.mostRepeated ?? []).reduce((n, r) => n + r.count - 1, 0);
    expect(repeats / (atlas?.calls ?? 1)).toBeGreaterThan(0.08);
    expect(atlas?.landed).toBe(0);
    // ...but each worker's landing starts a new stretch, so no repeat straddling one counts
    expect(atlas?.windowSize).toBeLessThanOrEqual(3);
    expect(atlas?.topSame).toBeNull();
    expect(changes.filter((c) => c.sessionId === "atlas")).toEqual([]);
    expect(f.get("atlas")?.lastVerdict.verdict).toBe("ok");
  });

  it("the same orchestrator with workers that land nothing is flagged", () => {
    const f = new SessionForest(policy);
    const changes: VerdictChange[] = [];
    for (let round = 0; round < 20; round++) {
      const worker = `w${round}`;
      f.setParent(worker, "atlas");
      changes.push(
        ...collect(f, [turn("atlas", null, "atlas"), read("atlas", null, ".omo/boulder.json", "atlas")]),
      );
      changes.push(...collect(f, [turn(worker, "atlas"), read(worker, "atlas", `src/m${round}.py`)]));
    }
    expect(changes.find((c) => c.sessionId === "atlas")?.verdict).toBe("stalling");
  });
});

describe("transitions only", () => {
  it("observe returns a change only when the verdict changes, with previous and root", () => {
    const f = new SessionForest(policy);
    f.setParent("w", "root");
    collect(f, [turn("root", null)]);
    const perCall: number[] = [];
    const all: VerdictChange[] = [];
    for (let i = 0; i < t.top_loop + 5; i++) {
      const r = f.observe(read("w", "root", "navbar.js"));
      perCall.push(r.changes.length);
      all.push(...r.changes);
      expect(r.event?.tool).toBe("read");
    }
    const ws = all.filter((c) => c.sessionId === "w");
    expect(ws.map((c) => [c.previous, c.verdict])).toEqual([
      ["ok", "stalling"],
      ["stalling", "looping"],
    ]);
    expect(ws[0]?.rootId).toBe("root");
    expect(ws[0]?.parentId).toBe("root");
    // the same read in a row: flagged at row_warn repeats, before top_warn reads
    expect(ws[0]?.reason).toBe("in_a_row");
    expect(ws[0]?.signals.inARow?.repeats).toBe(t.row_warn);
    expect(ws[0]?.signals.topRepeat?.count).toBe(t.row_warn + 1);
    expect(perCall.filter((n) => n > 0).length).toBe(all.length);
    const back = f
      .observe(edit("w", "root", "navbar.js", "a", "b"))
      .changes.filter((c) => c.sessionId === "w");
    expect(back.map((c) => [c.previous, c.verdict])).toEqual([["looping", "ok"]]);
    expect(f.observe(read("w", "root", "x.js")).changes).toEqual([]);
  });

  it("a non-tool observation returns no event", () => {
    const f = new SessionForest(policy);
    expect(f.observe(turn("a", null)).event).toBeNull();
    expect(f.observe({ kind: "compaction", sessionId: "a", time: 5 }).event).toBeNull();
  });
});

describe("parents, roots, cycles and agents", () => {
  it("rootOf walks to the top and survives cycles and self-parents", () => {
    const f = new SessionForest(policy);
    f.setParent("c", "b");
    f.setParent("b", "a");
    expect(f.rootOf("c")).toBe("a");
    expect(f.ancestors("c")).toEqual(["b", "a"]);
    expect(f.rootOf("a")).toBe("a");
    f.setParent("a", "c"); // a -> c -> b -> a
    expect(["a", "b", "c"]).toContain(f.rootOf("c"));
    expect(f.ancestors("c").length).toBeLessThanOrEqual(2);
    f.setParent("x", "x");
    expect(f.rootOf("x")).toBe("x");
    // observing inside a cycle terminates and rolls up without looping
    collect(f, [edit("c", "b", "f.py", "1", "2"), turn("b", "a")]);
    expect(f.get("c")?.signals().landed).toBe(1);
  });

  it("rootOf is bounded on a very deep chain", () => {
    const f = new SessionForest(policy);
    for (let i = 1; i < 100; i++) f.setParent(`s${i}`, `s${i - 1}`);
    expect(f.ancestors("s99").length).toBeLessThanOrEqual(32);
  });

  it("agents are kept as slugs, so the read-only list and the wire match", () => {
    const f = new SessionForest(policy);
    collect(f, [turn("a", null, "Sisyphus-Junior"), read("e", null, "x.py", "Explore")]);
    expect(f.get("a")?.agent).toBe("sisyphus-junior");
    expect(f.get("e")?.agent).toBe("explore");
    expect(f.get("e")?.readOnly).toBe(true);
    f.observe(usage("a", "m", 0)); // usage carries no agent and must not reset it
    expect(f.get("a")?.agent).toBe("sisyphus-junior");
  });
});

describe("eviction", () => {
  it("maxSessions keeps the most recently active sessions, including a new one", () => {
    const f = new SessionForest(policy, { maxSessions: 3 });
    collect(f, [
      read("a", null, "1.py"),
      read("b", null, "1.py"),
      read("c", null, "1.py"),
      read("a", null, "2.py"),
    ]);
    collect(f, [read("d", null, "1.py")]);
    expect(f.ids().sort()).toEqual(["a", "c", "d"]);
    // the new session keeps its state on the next call
    collect(f, [read("d", null, "2.py")]);
    expect(f.get("d")?.signals().calls).toBe(2);
    expect(f.size).toBe(3);
  });

  it("evictIdle drops sessions idle since before the cutoff and returns their ids", () => {
    const f = new SessionForest(policy);
    collect(f, [read("old", null, "1.py")]);
    const cutoff = clock + 1;
    collect(f, [read("new", null, "1.py")]);
    expect(f.evictIdle(cutoff)).toEqual(["old"]);
    expect(f.ids()).toEqual(["new"]);
    expect(f.evictIdle(0)).toEqual([]);
  });

  it("many short sessions never grow the forest beyond maxSessions", () => {
    const f = new SessionForest(policy, { maxSessions: 50 });
    for (let i = 0; i < 2000; i++) {
      f.setParent(`s${i}`, i % 10 ? `s${i - (i % 10)}` : null);
      f.observe(read(`s${i}`, null, "x.py"));
    }
    expect(f.size).toBe(50);
  });
});
