import { describe, expect, it } from "vitest";
import { CycleTracker, MAX_PERIOD } from "./cycle.ts";

function track(keys: string): CycleTracker {
  const c = new CycleTracker();
  for (const k of keys) c.push(k, "grep", `file ${k}`);
  return c;
}

describe("CycleTracker: the same two to four calls going round, results included", () => {
  it("counts whole turns of a cycle in a row", () => {
    expect(track("AB").current()).toBeNull();
    expect(track("ABA").current()).toBeNull();
    expect(track("ABAB").current()).toMatchObject({ period: 2, reps: 2 });
    expect(track("ABABABABAB").current()).toMatchObject({
      period: 2,
      reps: 5,
      tool: "grep",
      target: "file B",
    });
    expect(track("xyzABCABCAB").current()).toMatchObject({ period: 3, reps: 2 });
    expect(track("ABCDABCDABCD").current()).toMatchObject({ period: 4, reps: 3 });
  });

  it("one call repeated is not a cycle (the same-call rule counts it)", () => {
    expect(track("AAAAAAAA").current()).toBeNull();
    expect(track("AABAAB").current()).toBeNull();
  });

  it("a call that breaks the pattern (a new call, or the same call with a new result) ends the run", () => {
    expect(track("ABABABC").current()).toBeNull();
    // B' stands for B answering differently: the key carries the result
    const c = track("ABABAB");
    c.push("b", "grep", "file B");
    expect(c.current()).toBeNull();
    for (const k of "ABAB") c.push(k, "grep", `file ${k}`);
    expect(c.current()).toMatchObject({ period: 2, reps: 2 });
  });

  it("longer periods are not tracked: a few files revisited in turn is ordinary work", () => {
    const five = "ABCDE".slice(0, MAX_PERIOD + 1);
    expect(track(five.repeat(4)).current()).toBeNull();
  });

  it("reset (a landing, a person's message) starts over", () => {
    const c = track("ABABABAB");
    c.reset();
    expect(c.current()).toBeNull();
    for (const k of "ABA") c.push(k, "grep", k);
    expect(c.current()).toBeNull();
  });
});
