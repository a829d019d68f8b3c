import { describe, expect, it } from "vitest";
import { fragmentWithoutToken } from "./token.ts";
import { parseView, viewHash } from "./views.ts";

describe("views in the fragment", () => {
  it("round-trips every view; an id with odd characters survives", () => {
    for (const v of [
      { name: "sessions" },
      { name: "activity" },
      { name: "knobs" },
      { name: "session", id: "ses_a&b=c#d" },
    ] as const)
      expect(parseView(viewHash(v))).toEqual(v);
  });

  it("unknown or incomplete fragments are the Sessions readout; the token does not get in the way", () => {
    expect(parseView("")).toEqual({ name: "sessions" });
    expect(parseView("#view=nope")).toEqual({ name: "sessions" });
    expect(parseView("#view=session")).toEqual({ name: "sessions" });
    expect(parseView("#view=knobs&token=abc")).toEqual({ name: "knobs" });
    expect(fragmentWithoutToken("#view=session&id=ses_x&token=abc")).toBe("#view=session&id=ses_x");
  });
});
