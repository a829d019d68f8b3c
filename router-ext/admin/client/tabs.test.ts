import { describe, expect, it } from "vitest";
import { parseTab, tabHash } from "./tabs.ts";
import { fragmentWithoutToken } from "./token.ts";

describe("tabs in the fragment", () => {
  it("round-trips every tab; an id with odd characters survives", () => {
    for (const v of [
      { name: "sessions" },
      { name: "activity" },
      { name: "knobs" },
      { name: "session", id: "ses_a&b=c#d" },
    ] as const)
      expect(parseTab(tabHash(v))).toEqual(v);
  });

  it("unknown or incomplete fragments are the Sessions readout; the token does not get in the way", () => {
    expect(parseTab("")).toEqual({ name: "sessions" });
    expect(parseTab("#view=nope")).toEqual({ name: "sessions" });
    expect(parseTab("#view=session")).toEqual({ name: "sessions" });
    expect(parseTab("#view=knobs&token=abc")).toEqual({ name: "knobs" });
    expect(fragmentWithoutToken("#view=session&id=ses_x&token=abc")).toBe("#view=session&id=ses_x");
  });
});
