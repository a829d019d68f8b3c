import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { BoundedMap } from "./bounded-map.ts";
import { diffChange, editChange, writeChange } from "./change.ts";
import { coarsePath } from "./coarse-path.ts";
import { configSchema } from "./config.ts";
import { bump, Counter, maxEntry } from "./counts.ts";
import { policyFromConfig } from "./policy.ts";
import { replay, treesOf } from "./replay.ts";
import { evaluateCandidate, grid, median, sweep } from "./sweep.ts";
import { TopK } from "./top-k.ts";

describe("TopK (space-saving heavy hitters)", () => {
  it("top(n) orders exactly like a stable sort by guaranteed count (random streams, with evictions)", () => {
    let seed = 7;
    const rand = (m: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % m;
    };
    for (let round = 0; round < 200; round++) {
      const top = new TopK<number>(1 + rand(12));
      const len = rand(80);
      for (let i = 0; i < len; i++) {
        const key = rand(20);
        top.add(`k${key}`, key);
      }
      const n = rand(6);
      // The reference: the raw entries (private, read here only), stable-sorted, first n.
      const raw = (top as unknown as { counts: Map<string, { count: number; error: number; label: number }> })
        .counts;
      const reference = [...raw.entries()]
        .map(([key, v]) => ({ key, count: v.count - v.error, label: v.label }))
        .sort((a, b) => b.count - a.count);
      expect(top.top(n)).toEqual(reference.slice(0, n));
      expect(top.top(top.size)).toEqual(reference);
    }
  });

  it("keeps at most k keys and always keeps a key more frequent than 1/k", () => {
    const top = new TopK<string>(4);
    for (let i = 0; i < 1000; i++) {
      top.add(`noise${i}`, "n");
      top.add("hot", "h");
    }
    expect(top.size).toBe(4);
    const best = top.max();
    expect(best?.key).toBe("hot");
    expect(best?.count).toBeGreaterThanOrEqual(900);
    expect(best?.count).toBeLessThanOrEqual(1000);
    expect(top.top(10).length).toBe(4);
    expect(top.top(2).map((e) => e.count)).toEqual([...top.top(2).map((e) => e.count)].sort((a, b) => b - a));
    top.clear();
    expect([top.size, top.max()]).toEqual([0, null]);
  });

  it("reports guaranteed counts: a key seen once after many distinct keys is never shown as repeated", () => {
    const top = new TopK<string>(8);
    for (let i = 0; i < 5000; i++) expect(top.add(`k${i}`, "x")).toBeGreaterThanOrEqual(1);
    expect(top.max()?.count).toBe(1);
    expect(top.top(8).every((e) => e.count === 1)).toBe(true);
  });

  it("counts exactly while under capacity", () => {
    const top = new TopK<number>(10);
    for (const k of ["a", "b", "a", "c", "a", "b"]) top.add(k, 0);
    expect(top.top(3).map((e) => [e.key, e.count])).toEqual([
      ["a", 3],
      ["b", 2],
      ["c", 1],
    ]);
  });
});

/** A seeded stream of integers below m (an LCG's high bits: its low bits repeat with a short period). */
function randomBelow(seed: number): (m: number) => number {
  let x = seed;
  return (m) => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return Math.floor((x / 2 ** 31) * m);
  };
}

describe("TopK kept current through adds", () => {
  it("top(n) and max() asked after every add answer as a fresh selection would (random streams, with evictions)", () => {
    const rand = randomBelow(11);
    for (let round = 0; round < 300; round++) {
      const k = 1 + rand(10);
      const live = new TopK<number>(k);
      const n = 1 + rand(4);
      for (let i = 0, len = rand(120); i < len; i++) {
        const key = rand(16);
        live.add(`k${key}`, key);
        if (rand(5) === 0) live.clear();
        // a twin fed the same keys and asked only now: the reference selection
        const fresh = new TopK<number>(k);
        (fresh as unknown as { counts: unknown }).counts = new Map(
          [...(live as unknown as { counts: Map<string, object> }).counts].map(([key2, v]) => [
            key2,
            { ...v },
          ]),
        );
        expect(live.top(n)).toEqual(fresh.top(n));
        if (rand(3) === 0) expect(live.max()).toEqual(fresh.max());
      }
    }
  });
});

/** The space-saving rule as first written (a scan per eviction, a selection per ask): the reference. */
class ScanTopK {
  readonly counts = new Map<string, { count: number; error: number; label: number }>();
  constructor(readonly k: number) {}
  add(key: string, label: number): number {
    const hit = this.counts.get(key);
    if (hit) return ++hit.count;
    if (this.counts.size < this.k) {
      this.counts.set(key, { count: 1, error: 0, label });
      return 1;
    }
    let minKey = "";
    let min = Number.POSITIVE_INFINITY;
    for (const [k, v] of this.counts) {
      if (v.count < min) {
        min = v.count;
        minKey = k;
      }
    }
    this.counts.delete(minKey);
    this.counts.set(key, { count: min + 1, error: min, label });
    return min + 1;
  }
  top(n: number, atLeast: number) {
    return [...this.counts]
      .map(([key, v]) => ({ key, count: v.count - v.error, label: v.label }))
      .filter((e) => e.count >= atLeast)
      .sort((a, b) => b.count - a.count)
      .slice(0, n);
  }
}

describe("TopK against the scanning reference", () => {
  it("the same evictions, counts, top(n) and max() after every add, with and without atLeast", () => {
    const rand = randomBelow(3);
    for (let round = 0; round < 300; round++) {
      const k = 1 + rand(8);
      const atLeast = 1 + rand(3);
      const n = rand(5);
      const live = new TopK<number>(k, { atLeast });
      const ref = new ScanTopK(k);
      // a narrow key range repeats a lot, a wide one evicts on nearly every add
      const keys = 2 + rand(round % 2 ? 40 : 10);
      for (let i = 0, len = rand(150); i < len; i++) {
        const key = rand(keys);
        expect(live.add(`k${key}`, key)).toBe(ref.add(`k${key}`, key));
        if (rand(40) === 0) {
          live.clear();
          ref.counts.clear();
        }
        expect(live.top(n)).toEqual(ref.top(n, atLeast));
        expect(live.max()).toEqual(ref.top(1, atLeast)[0] ?? null);
        expect(live.size).toBe(ref.counts.size);
      }
    }
  });
});

describe("Counter (a counting map with its maximum kept)", () => {
  it("max() equals maxEntry of a plain counting map under random adds, removes and clears", () => {
    const rand = randomBelow(5);
    for (let round = 0; round < 200; round++) {
      const counter = new Counter<string>();
      const plain = new Map<string, number>();
      const notes = new Map<string, string>();
      for (let i = 0, len = rand(200); i < len; i++) {
        const key = `k${rand(1 + (round % 12))}`;
        const op = rand(10);
        if (op < 6) {
          if (!plain.has(key)) notes.set(key, `note${i}`);
          counter.add(key, `note${i}`);
          bump(plain, key, 1);
        } else if (op < 9) {
          counter.remove(key);
          bump(plain, key, -1);
        } else if (rand(4) === 0) {
          counter.clear();
          plain.clear();
        }
        const want = maxEntry(plain);
        const got = counter.max();
        expect(got ? [got.key, got.n, got.note] : null).toEqual(want ? [...want, notes.get(want[0])] : null);
        expect([counter.size, counter.has(key)]).toEqual([plain.size, plain.has(key)]);
      }
    }
  });
});

describe("BoundedMap", () => {
  it("drops the least recently set or touched entry past capacity", () => {
    const m = new BoundedMap<string, number>(3);
    m.set("a", 1);
    m.set("b", 2);
    m.set("c", 3);
    m.touch("a");
    m.set("d", 4);
    expect([...m.keys()]).toEqual(["c", "a", "d"]);
    m.set("c", 5);
    m.set("e", 6);
    expect([...m.keys()]).toEqual(["d", "c", "e"]);
    expect(m.size).toBe(3);
    expect(m.touch("zz")).toBeUndefined();
    expect(m.delete("d")).toBe(true);
    m.clear();
    expect(m.size).toBe(0);
  });

  it("mark() sets like set() and says whether the key was there", () => {
    const m = new BoundedMap<string, number>(2);
    expect([m.mark("a", 1), m.mark("b", 2), m.mark("a", 3)]).toEqual([false, false, true]);
    expect([...m.entries()]).toEqual([
      ["b", 2],
      ["a", 3],
    ]);
    expect(m.mark("c", 4)).toBe(false);
    expect([...m.keys()]).toEqual(["a", "c"]);
  });
});

describe("change fingerprints", () => {
  it("a diff and its reverse swap fwd and rev; file order does not matter", () => {
    const ab = diffChange("--- a/x.py\n+++ b/x.py\n@@\n-A\n+B\n");
    const ba = diffChange("--- a/x.py\n+++ b/x.py\n@@\n-B\n+A\n");
    expect(ab && ba && [ab.fwd === ba.rev, ab.rev === ba.fwd, ab.fwd === ba.fwd]).toEqual([
      true,
      true,
      false,
    ]);
    const two = "--- a/x.py\n+++ b/x.py\n-1\n+2\ndiff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n-3\n+4\n";
    const swapped =
      "--- a/y.py\n+++ b/y.py\n-3\n+4\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n-1\n+2\n";
    expect(diffChange(two)?.fwd).toBe(diffChange(swapped)?.fwd);
    expect(diffChange("--- a/x.py\n+++ b/z.py\n-1\n+2\n")?.fwd).not.toBe(
      diffChange("--- a/x.py\n+++ b/x.py\n-1\n+2\n")?.fwd,
    );
    expect(diffChange("no hunks here")).toBeNull();
    expect(diffChange("--- /dev/null\n+++ b/new.py\n+x\n")).not.toBeNull();
  });

  it("edit and write changes reverse the same way", () => {
    const e = editChange("a", "x", "y");
    expect(editChange("a", "y", "x")).toEqual({ fwd: e.rev, rev: e.fwd });
    const w = writeChange("p", "h1", "h2");
    expect(writeChange("p", "h2", "h1")).toEqual({ fwd: w.rev, rev: w.fwd });
    expect(writeChange("q", "h1", "h2").fwd).not.toBe(w.fwd);
  });
});

describe("coarsePath", () => {
  it("relativizes to the directory, hides the account name, trims long paths", () => {
    expect(coarsePath("/w/repo/src/a.ts", "/w/repo/")).toBe("src/a.ts");
    expect(coarsePath("/w/repo", "/w/repo")).toBe(".");
    expect(coarsePath("/w/repository/a", "/w/repo")).toBe("/w/repository/a");
    expect(coarsePath("C:\\w\\repo\\a.ts", "C:\\w\\repo")).toBe("a.ts");
    // The directory named last is kept normalized: another one, then the first again, each read afresh.
    expect(coarsePath("/w/repo/b.ts", "/w/repo/")).toBe("b.ts");
    expect(coarsePath("/home/alice", null)).toBe("~");
    expect(coarsePath("./x", undefined)).toBe("x");
    expect(coarsePath("", null)).toBe(".");
    const long = coarsePath(`/x/${"d/".repeat(200)}f.py`, null);
    expect(long.length).toBe(200);
    expect(long.endsWith("f.py")).toBe(true);
    expect(coarsePath("/w/a", 5 as never)).toBe("/w/a");
  });
});

describe("replay and sweep", () => {
  const policy = policyFromConfig(configSchema.parse({}));
  const msg = (i: number, tool: string, input: unknown, metadata: unknown = {}, status = "completed") => ({
    info: {
      id: `m${i}`,
      role: "assistant",
      agent: "build",
      time: { created: i * 1000 },
      cost: 0.01,
      tokens: { input: 10 },
    },
    parts: [
      {
        type: "tool",
        tool,
        callID: `c${i}`,
        state: { status, input, metadata, time: { end: i * 1000 + 1 } },
      },
    ],
  });
  const stuck = {
    id: "stuck",
    parentId: null,
    directory: "/r",
    messages: Array.from({ length: 12 }, (_, i) => msg(i, "read", { filePath: "/r/a.js" })),
  };
  const fine = {
    id: "fine",
    parentId: null,
    messages: Array.from({ length: 12 }, (_, i) =>
      i % 3 === 2
        ? msg(
            i,
            "edit",
            { filePath: "/r/a.js", oldString: `${i}`, newString: `${i + 1}` },
            { diff: `-${i}\n+${i + 1}` },
          )
        : msg(i, "read", { filePath: `/r/f${i}.js` }),
    ),
  };

  it("replay reports verdicts, first flag call, counts and a timeline", () => {
    const [a, b] = replay([stuck, fine], policy, { timeline: true });
    expect(a).toMatchObject({
      id: "stuck",
      calls: 12,
      landed: 0,
      worst: "stalling",
      // the same read in a row: the sixth is the fifth repeat
      first_flag_call: policy.thresholds.row_warn + 1,
      reason: "in_a_row",
    });
    expect(a?.dup_share).toBeCloseTo(11 / 12, 3);
    expect(a?.top_target).toBe("read a.js");
    expect(a?.timeline).toHaveLength(12);
    expect(a?.timeline[policy.thresholds.row_warn]?.verdict).toBe("stalling");
    expect(a?.timeline[policy.thresholds.row_warn - 1]?.verdict).toBe("ok");
    expect(a?.timeline[0]?.verdict).toBe("ok");
    expect(b).toMatchObject({ id: "fine", calls: 12, landed: 4, worst: "ok", first_flag_call: null });
    expect(b?.usd).toBeCloseTo(0.12, 6);
  });

  it("treesOf groups by root (a missing parent makes a root; a parent cycle terminates), in input order", () => {
    const s = (id: string, parentId: string | null) => ({ id, parentId });
    const groups = treesOf([
      s("a", null),
      s("b", "x"), // parent not loaded: a root of its own
      s("a1", "a"),
      s("a11", "a1"),
      s("c1", "c2"),
      s("c2", "c1"), // a cycle: still one group, no hang
    ]);
    expect(groups.map((g) => g.map((x) => x.id))).toEqual([["a", "a1", "a11"], ["b"], ["c1", "c2"]]);
  });

  it("replaying trees together or one by one gives the same results, in input order", () => {
    const child = { ...stuck, id: "child", parentId: "fine" };
    const together = replay([stuck, fine, child], policy, { timeline: true });
    expect(together.map((r) => r.id)).toEqual(["stuck", "fine", "child"]);
    const alone = [
      ...replay([stuck], policy, { timeline: true }),
      ...replay([fine, child], policy, { timeline: true }),
    ];
    expect(together).toEqual([alone[0], alone[1], alone[2]]);
    // The child is judged inside its parent's tree: its looping reads do not land anything for it.
    expect(together[2]).toMatchObject({ id: "child", worst: "stalling" });
  });

  it("sweep picks the safe candidate that catches the most loops", () => {
    const labels = { stuck: "loop", fine: "healthy" } as const;
    const rows = grid({ top_warn: [4, 6, 50] });
    expect(rows).toEqual([{ top_warn: 4 }, { top_warn: 6 }, { top_warn: 50 }]);
    expect(grid({ top_warn: [4, 6], dup_warn: [0.3, 0.5] })).toHaveLength(4);
    const row = evaluateCandidate([stuck, fine], labels, policy, {
      top_warn: 50,
      row_warn: 50,
      dup_warn: 1,
      cum_warn: 50,
      ceiling_turns: 1000,
    });
    expect([row.loops, row.loopsCaught, row.healthy, row.healthyFlagged]).toEqual([1, 0, 1, 0]);
    const { proposed } = sweep([stuck, fine], labels, policy, rows);
    expect(proposed?.thresholds).toEqual({ top_warn: 4 });
    expect(proposed?.medianCallsToDetection).toBe(4);
    expect(median([3, 1, 2])).toBe(2);
    expect(median([1, 2, 3, 4])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});

describe("sha256", () => {
  it("is the standard sha256 hex, whichever crypto entry point the runtime has", async () => {
    const { sha256, shortHash } = await import("./hash.ts");
    expect(sha256("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256("caf\u00e9")).toBe(createHash("sha256").update("caf\u00e9").digest("hex"));
    expect(shortHash("abc")).toBe("ba7816bf");
  });
});
