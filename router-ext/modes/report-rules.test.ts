import { describe, expect, it } from "vitest";
import { isFlag, takesVerdict, watchdogCovered } from "./report-rules.ts";

describe("report rules", () => {
  it("the watchdog's report is dropped only while the session's plugin is heard from", () => {
    expect(watchdogCovered(1000, 1500, 600)).toBe(true);
    expect(watchdogCovered(1000, 1600, 600)).toBe(true);
    expect(watchdogCovered(1000, 1601, 600)).toBe(false);
    expect(watchdogCovered(null, 1500, 600)).toBe(false);
    expect(watchdogCovered(1000, 1500, undefined)).toBe(false);
  });

  it("a flag is leaving ok; a change between flags or back to ok is not", () => {
    expect(isFlag("ok", "stalling")).toBe(true);
    expect(isFlag("ok", "looping")).toBe(true);
    expect(isFlag("stalling", "looping")).toBe(false);
    expect(isFlag("looping", "ok")).toBe(false);
  });

  it("a late, older transition does not overwrite a newer verdict", () => {
    expect(takesVerdict(null, 5)).toBe(true);
    expect(takesVerdict(5, 5)).toBe(true);
    expect(takesVerdict(5, 6)).toBe(true);
    expect(takesVerdict(6, 5)).toBe(false);
  });
});
