import { describe, expect, it } from "vitest";
import { configSchema, policyFromConfig } from "../shared/index.ts";
import { CallDedupe, callFromHook, callFromPart } from "./call-intake.ts";

const policy = policyFromConfig(configSchema.parse({}));
const ctx = { parentId: null, agent: "build", time: 5, directory: "/w", testPatterns: policy.testPatterns };

describe("CallDedupe", () => {
  it("skips the completed part of a call the hook counted, once", () => {
    const d = new CallDedupe();
    expect(d.fromHook("s", "call_1")).toBe(true);
    expect(d.fromPart("prt_1", "s", "call_1", "completed")).toBe(false);
    // The same part re-published (e.g. pruned output) is still not counted.
    expect(d.fromPart("prt_1", "s", "call_1", "completed")).toBe(false);
  });

  it("counts error parts (no hook fires for them) exactly once", () => {
    const d = new CallDedupe();
    expect(d.fromPart("prt_2", "s", "call_2", "error")).toBe(true);
    expect(d.fromPart("prt_2", "s", "call_2", "error")).toBe(false);
  });

  it("counts a completed part when the hook never saw the call", () => {
    const d = new CallDedupe();
    expect(d.fromPart("prt_3", "s", "call_3", "completed")).toBe(true);
  });

  it("a provider reusing call ids across messages is still counted per call", () => {
    const d = new CallDedupe();
    d.fromHook("s", "call_0");
    expect(d.fromPart("prt_a", "s", "call_0", "completed")).toBe(false);
    d.fromHook("s", "call_0");
    expect(d.fromPart("prt_b", "s", "call_0", "completed")).toBe(false);
    expect(d.fromPart("prt_c", "s", "call_0", "error")).toBe(true);
  });

  it("keys by session: the same call id in two sessions is two calls", () => {
    const d = new CallDedupe();
    d.fromHook("s1", "call_9");
    expect(d.fromPart("prt_x", "s2", "call_9", "completed")).toBe(true);
  });

  it("stays bounded", () => {
    const d = new CallDedupe(100);
    for (let i = 0; i < 10_000; i++) {
      d.fromHook("s", `c${i}`);
      d.fromPart(`p${i}`, "s", `e${i}`, "error");
    }
    expect(d.size).toBeLessThanOrEqual(200);
  });
});

describe("callFromHook", () => {
  const bash = (metadata: unknown) =>
    callFromHook(
      { tool: "bash", sessionID: "s", callID: "c", args: { command: "npm test -- --grep secret" } },
      { title: "t", output: "FAILED everything", metadata },
      ctx,
    );

  it("reads bash's exit from metadata.exit", () => {
    expect(bash({ exit: 3, output: "ok" })?.failed).toBe(true);
    expect(bash({ exit: 0, output: "Error: FAILED" })?.failed).toBe(false);
    expect(bash({ exit: 0 })?.exit).toBe(0);
  });

  it("does not read the old exitCode / exit_code fields", () => {
    const c = bash({ exitCode: 1, exit_code: 1 });
    expect(c?.exit).toBeNull();
    expect(c?.failed).toBe(false);
  });

  it("keeps only hashes and a coarse target", () => {
    const c = bash({ exit: 1 });
    expect(c?.target).toBe("npm test");
    expect(JSON.stringify(c)).not.toContain("secret");
    expect(JSON.stringify(c)).not.toContain("FAILED");
  });

  it("returns null on malformed input instead of throwing", () => {
    expect(callFromHook(undefined, undefined, ctx)).toBeNull();
    expect(callFromHook({ tool: 3 }, null, ctx)).toBeNull();
  });
});

describe("callFromPart", () => {
  it("turns a failed read part into a failed call with the path as target", () => {
    const part = {
      type: "tool",
      tool: "read",
      callID: "c",
      sessionID: "ses_e",
      state: {
        status: "error",
        input: { filePath: "/w/gone.js" },
        error: "File not found",
        time: { start: 1, end: 2 },
      },
    };
    const c = callFromPart(part, ctx);
    expect(c).toMatchObject({ sessionId: "ses_e", tool: "read", target: "gone.js", failed: true, time: 2 });
  });
});
