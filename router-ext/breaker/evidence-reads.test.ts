import { describe, expect, it } from "vitest";
import { landedSince } from "./evidence-reads.ts";

describe("landedSince", () => {
  it("reads last_landed_at from a stored signals document; 0 when absent or malformed", () => {
    expect(landedSince('{"last_landed_at":1234,"turns":3}')).toBe(1234);
    expect(landedSince('{"last_landed_at":null}')).toBe(0);
    expect(landedSince('{"last_landed_at":"1234"}')).toBe(0);
    expect(landedSince("null")).toBe(0);
    expect(landedSince("{not json")).toBe(0);
  });
});
