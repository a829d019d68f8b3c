import { describe, expect, it } from "vitest";
import { coalescedReload } from "./coalesced-reload.ts";

/** A reload the test lets finish, one call at a time. */
function gatedReload() {
  const waiting: Array<() => void> = [];
  let calls = 0;
  const reload = () =>
    new Promise<void>((resolve) => {
      calls++;
      waiting.push(resolve);
    });
  const finishOne = async () => {
    waiting.shift()?.();
    await new Promise((r) => setImmediate(r));
  };
  return { reload, finishOne, calls: () => calls };
}

describe("coalescedReload", () => {
  it("never overlaps reloads, and a burst during one collapses into one more", async () => {
    const g = gatedReload();
    const r = coalescedReload(g.reload, () => {});
    r.signal();
    r.signal();
    r.signal();
    r.signal();
    expect(g.calls()).toBe(1);
    await g.finishOne();
    expect(g.calls()).toBe(2); // the three signals during the first run: one more
    await g.finishOne();
    await r.idle();
    expect(r.runs()).toBe(2);
    r.signal();
    expect(g.calls()).toBe(3);
    await g.finishOne();
    await r.idle();
    expect(r.runs()).toBe(3);
  });

  it("logs a failed reload and runs again on the next signal", async () => {
    const lines: string[] = [];
    let fail = true;
    const r = coalescedReload(
      async () => {
        if (fail) throw new Error("db gone");
      },
      (l) => lines.push(l),
    );
    r.signal();
    await r.idle();
    expect(r.runs()).toBe(0);
    expect(lines).toEqual(["replica feed: reload failed (db gone); next change retries"]);
    fail = false;
    r.signal();
    await r.idle();
    expect(r.runs()).toBe(1);
  });
});
