import { describe, expect, it } from "vitest";
import { configSchema } from "../shared/index.ts";
import { requestKind, usageOf, userTurnOf } from "./turns.ts";

const markers = configSchema.parse({}).progress.continuation_markers;

describe("requestKind", () => {
  it.each([
    ["build", "turn"],
    ["explore", "turn"],
    ["title", "title"],
    ["compaction", "compaction"],
    [undefined, "turn"],
  ])("%s -> %s", (agent, kind) => {
    expect(requestKind(agent)).toBe(kind);
  });
});

describe("userTurnOf", () => {
  const msg = (parts: unknown[], input: Record<string, unknown> = { sessionID: "ses_a" }) =>
    userTurnOf(input, { message: { id: "msg_1", agent: "atlas" }, parts }, markers);

  it("a typed prompt is not injected", () => {
    expect(msg([{ type: "text", text: "please fix it" }])).toEqual({
      sessionId: "ses_a",
      messageId: "msg_1",
      agent: "atlas",
      injected: false,
      textHash: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  });
  it("all-synthetic text parts are injected", () => {
    expect(msg([{ type: "text", text: "Continue", synthetic: true }])?.injected).toBe(true);
  });
  it("an oh-my-opencode directive is injected", () => {
    const t = "[SYSTEM DIRECTIVE: OH-MY-OPENCODE - TODO CONTINUATION]\n...\n<!-- OMO_INTERNAL_INITIATOR -->";
    expect(msg([{ type: "text", text: t }])?.injected).toBe(true);
  });
  it("no session id: nothing", () => {
    expect(userTurnOf({}, {}, markers)).toBeNull();
  });
});

describe("usageOf", () => {
  it("reads cost and prompt tokens of a finished assistant message", () => {
    const info = {
      tokens: { input: 100, output: 5, cache: { read: 900, write: 0 } },
      time: { created: 1, completed: 2 },
      id: "msg_a",
      sessionID: "ses_a",
      role: "assistant",
      cost: 0.012,
    };
    expect(usageOf({ info })).toEqual({
      kind: "usage",
      sessionId: "ses_a",
      messageId: "msg_a",
      time: 2,
      costUsd: 0.012,
      promptTokens: 1000,
      contextTokens: 1000,
    });
  });
  it("ignores unfinished and user messages", () => {
    expect(
      usageOf({ info: { id: "m", sessionID: "s", role: "assistant", time: { created: 1 } } }),
    ).toBeNull();
    expect(usageOf({ info: { id: "m", sessionID: "s", role: "user", time: { completed: 1 } } })).toBeNull();
    expect(usageOf(undefined)).toBeNull();
  });
});
