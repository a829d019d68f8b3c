import { describe, expect, it } from "vitest";
import { CycleTracker, MAX_PERIOD, MAX_TRACKED, MIN_RETRACE_PERIOD } from "./cycle.ts";

function track(keys: string | readonly string[]): CycleTracker {
  const c = new CycleTracker();
  for (const k of keys) c.push(k, "grep", `file ${k}`);
  return c;
}

/** n different calls: a sweep of views. */
const sweep = (n: number, tag = "v") => Array.from({ length: n }, (_, i) => `${tag}${i}`);

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

describe("in a row: the same call, or two calls in turn, again with the same answers", () => {
  it("counts repeats, not calls, and names the period", () => {
    expect(track("xA").row()).toBeNull();
    expect(track("xAA").row()).toMatchObject({ period: 1, repeats: 1, target: "file A" });
    expect(track("xAAAAAA").row()).toMatchObject({ period: 1, repeats: 5 });
    expect(track("xABA").row()).toMatchObject({ period: 2, repeats: 1 });
    expect(track("xABABABA").row()).toMatchObject({ period: 2, repeats: 5 });
  });

  it("a new call or a new answer (a new key) ends it; a landing resets it", () => {
    expect(track("AAAAB").row()).toBeNull();
    expect(track("ABABC").row()).toBeNull();
    const c = track("AAAA");
    c.reset();
    c.push("A", "grep", "file A");
    expect(c.row()).toBeNull();
  });
});

describe("retrace: a sweep of different calls redone in the same order", () => {
  it("counts the different calls redone so far, a few calls into the second pass, for sweeps of 6 to 17", () => {
    for (const n of [6, 9, 12, 17]) {
      const pass = sweep(n);
      expect(track(pass).retrace(), `${n}`).toBeNull();
      for (let k = 2; k <= n; k++) {
        expect(track([...pass, ...pass.slice(0, k)]).retrace(), `${n}/${k}`).toMatchObject({
          period: n,
          calls: k,
          distinct: k,
          target: `file v${k - 1}`,
        });
      }
      // a third pass adds nothing new: the different calls stay at the sweep's size
      expect(track([...pass, ...pass, ...pass]).retrace()).toMatchObject({
        period: n,
        calls: 2 * n,
        distinct: n,
      });
    }
  });

  it("two or three calls in turn are not a retrace (the cycle counts them), nor the same call again", () => {
    expect(track("ABCABCABCABC").retrace()).toBeNull();
    expect(track("ABABABABAB").retrace()).toBeNull();
    expect(track("AAAAAAAAAA").retrace()).toBeNull();
    // A B A B, then C, then A B A B: the repeat five back holds only two different calls
    expect(track("ABABCABAB").retrace()).toMatchObject({ period: 5, distinct: 2 });
  });

  it("the order matters: the same views re-read shuffled, or with gaps, are not redone in order", () => {
    const pass = sweep(8);
    const shuffled = [...pass.slice(4), ...pass.slice(0, 4)].reverse();
    expect(track([...pass, ...shuffled]).retrace()?.distinct ?? 0).toBeLessThan(2);
    // four earlier views re-read in their order but picked out of a longer stretch
    const gapped = [...pass, "n1", "n2", "v1", "v3", "v4", "v6"];
    expect(track(gapped).retrace()?.distinct ?? 0).toBeLessThan(2);
  });

  it("a changed answer, a new call or a landing ends the run", () => {
    const pass = sweep(9);
    expect(track([...pass, ...pass.slice(0, 5), "v5-changed"]).retrace()).toBeNull();
    expect(track([...pass, ...pass.slice(0, 5), "new"]).retrace()).toBeNull();
    const c = track([...pass, ...pass.slice(0, 3)]);
    c.reset();
    for (const k of pass.slice(3, 6)) c.push(k, "grep", k);
    expect(c.retrace()).toBeNull();
  });

  it("periods from MIN_RETRACE_PERIOD to MAX_TRACKED are seen; longer sweeps are not", () => {
    expect(MIN_RETRACE_PERIOD).toBe(MAX_PERIOD);
    const longest = sweep(MAX_TRACKED);
    expect(track([...longest, ...longest.slice(0, 6)]).retrace()).toMatchObject({
      period: MAX_TRACKED,
      distinct: 6,
    });
    const longer = sweep(MAX_TRACKED + 1);
    expect(track([...longer, ...longer.slice(0, 6)]).retrace()).toBeNull();
  });
});
