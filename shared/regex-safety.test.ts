import { describe, expect, it } from "vitest";
import { configSchema } from "./config.ts";
import { regexHazard } from "./regex-safety.ts";

describe("regex knobs and catastrophic backtracking", () => {
  it("keeps every shipped test_commands pattern", () => {
    for (const p of configSchema.parse({}).progress.test_commands) expect(regexHazard(p), p).toBeNull();
  });

  it.each([
    "^(a+)+$",
    "(\\w+\\s?)*$",
    "(x+x+)+y",
    "(.*a){12}",
    "^(a|aa)+$",
    "(a|a)*$",
    "((ab)*c)+",
    "(?:a{2,})*",
  ])("refuses %s", (p) => {
    expect(regexHazard(p)).toMatch(/catastrophic backtracking/);
  });

  it.each(["^(python3?\\s+-m\\s+)?pytest", "(ab)+", "[(+*]+", "\\(a+\\)+", "(a{2}){3}", "a+b*c?"])(
    "lets %s through",
    (p) => {
      expect(regexHazard(p)).toBeNull();
    },
  );

  it("the config refuses ^(a+)+$ by path, with the reason", () => {
    const r = configSchema.safeParse({ progress: { test_commands: ["^(a+)+$"] } });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.path).toEqual(["progress", "test_commands", 0]);
    expect(r.error?.issues[0]?.message).toMatch(/catastrophic backtracking/);
  });
});
