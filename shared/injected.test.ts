import { describe, expect, it } from "vitest";
import { configSchema } from "./config.ts";
import { isInjectedTurn } from "./injected.ts";

const markers = configSchema.parse({}).progress.continuation_markers;

describe("isInjectedTurn", () => {
  it("a real user turn is not injected", () => {
    expect(isInjectedTurn([{ type: "text", text: "fix the navbar please" }], markers)).toBe(false);
    // a real turn with a synthetic file expansion attached is still a real turn
    expect(
      isInjectedTurn(
        [
          { type: "text", text: "look at @a.py" },
          { type: "text", text: "Called the Read tool with the following input: ...", synthetic: true },
        ],
        markers,
      ),
    ).toBe(false);
  });

  it("all-synthetic text parts are injected", () => {
    expect(
      isInjectedTurn([{ type: "text", text: "Summarize the task tool output above", synthetic: true }], []),
    ).toBe(true);
  });

  it("metadata.compaction_continue marks opencode's and oh-my-opencode's continue turns", () => {
    const text =
      "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.";
    expect(
      isInjectedTurn([{ type: "text", text, synthetic: true, metadata: { compaction_continue: true } }], []),
    ).toBe(true);
    expect(isInjectedTurn([{ type: "text", text, metadata: { compaction_continue: true } }], [])).toBe(true);
    expect(isInjectedTurn([{ type: "text", text, metadata: { compaction_continue: false } }], [])).toBe(
      false,
    );
  });

  it("the oh-my-opencode directive and internal-initiator marker are injected even without synthetic", () => {
    const directive = "[SYSTEM DIRECTIVE: OH-MY-OPENCODE - TODO CONTINUATION]\n\nIncomplete tasks remain.";
    expect(isInjectedTurn([{ type: "text", text: directive }], markers)).toBe(true);
    expect(isInjectedTurn([{ type: "text", text: "go on\n<!-- OMO_INTERNAL_INITIATOR -->" }], markers)).toBe(
      true,
    );
    expect(isInjectedTurn([{ type: "text", text: directive }], [])).toBe(false);
  });

  it("uses the configured markers", () => {
    expect(isInjectedTurn([{ type: "text", text: "<<my-bot>> keep going" }], ["<<my-bot>>"])).toBe(true);
    expect(isInjectedTurn([{ type: "text", text: "keep going" }], ["<<my-bot>>"])).toBe(false);
  });

  it("no text parts, or junk, is not injected and does not throw", () => {
    expect(isInjectedTurn([], markers)).toBe(false);
    expect(isInjectedTurn([{ type: "file", synthetic: true }], markers)).toBe(false);
    const junk = [null, 3, "x", { type: "text", text: 5, metadata: "m" }] as never;
    expect(isInjectedTurn(junk, markers)).toBe(false);
    expect(isInjectedTurn(null as never, markers)).toBe(false);
  });
});
