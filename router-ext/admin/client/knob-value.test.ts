import { describe, expect, it } from "vitest";
import { displayValue, knobSection, parseControl } from "./knob-value.ts";
import type { KnobView } from "./schemas.ts";

const knob = (over: Partial<KnobView>): KnobView => ({
  path: "x.y",
  value: 1,
  default: 1,
  kind: "number",
  description: "",
  ...over,
});

describe("parseControl", () => {
  it.each([
    [knob({ kind: "integer" }), "7", { ok: true, value: 7 }],
    [knob({ kind: "number" }), " 0.25 ", { ok: true, value: 0.25 }],
    [knob({ kind: "integer" }), "seven", { ok: false, error: "not a number: seven" }],
    [knob({ kind: "integer" }), "", { ok: false, error: "not a number: (empty)" }],
    [knob({ kind: "integer", default: null }), "", { ok: true, value: null }],
    [knob({ kind: "boolean", value: false }), true, { ok: true, value: true }],
    [knob({ kind: "duration", value: 300_000 }), "90", { ok: true, value: 90 }],
    [knob({ kind: "duration", value: 300_000 }), "5m", { ok: true, value: "5m" }],
    [
      knob({ kind: "enum", options: ["warn", "auto_recover"] }),
      "auto_recover",
      { ok: true, value: "auto_recover" },
    ],
    [knob({ kind: "string", value: null }), "", { ok: true, value: null }],
    [knob({ kind: "string", value: ["a"] }), "a, b,,c", { ok: true, value: ["a", "b", "c"] }],
    [knob({ kind: "list", value: [] }), "^a{1,3}\n\n b \n", { ok: true, value: ["^a{1,3}", "b"] }],
    [knob({ kind: "list", value: [], nullable: true }), " ", { ok: true, value: null }],
    [knob({ kind: "json", value: {} }), '{"m": "x"}', { ok: true, value: { m: "x" } }],
    [knob({ kind: "json", value: {} }), "{m: x}", { ok: false, error: "not valid JSON" }],
  ])("%# %j", (k, raw, want) => expect(parseControl(k, raw)).toEqual(want));
});

describe("displayValue", () => {
  it("formats durations in milliseconds back to knob text", () => {
    expect(displayValue(knob({ kind: "duration" }), 300_000)).toBe("5m");
    expect(displayValue(knob({ kind: "duration" }), "90s")).toBe("90s");
  });
  it("shows null as empty and lists comma-separated", () => {
    expect(displayValue(knob({}), null)).toBe("");
    expect(displayValue(knob({ kind: "string" }), ["a", "b"])).toBe("a, b");
    expect(displayValue(knob({ kind: "list" }), ["a", "b"])).toBe("a\nb");
    expect(displayValue(knob({ kind: "json" }), { a: 1 })).toBe('{"a":1}');
  });
});

it("knobSection takes the first path segment", () => {
  expect(knobSection("thresholds.top_warn")).toBe("thresholds");
  expect(knobSection("mode")).toBe("mode");
});
