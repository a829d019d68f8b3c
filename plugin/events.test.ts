// The pure mapping from opencode's shapes to the plugin's typed values
// (plugin/events.ts): real shapes in, from a recorded session exported by
// opencode 1.18.33 (test/fixtures/recorded) and the live payloads in the
// opencode reference, and junk of every kind, which must give null and
// never throw.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { configSchema, obj } from "../shared/index.ts";
import {
  compactionContextOf,
  headersOf,
  llmRequestOf,
  pluginEventOf,
  requestKind,
  sessionIdOf,
  sessionSeenOf,
  toolFinishedOf,
  toolPartHead,
  toolStartingOf,
  usageOf,
  userTurnOf,
} from "./events.ts";

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

describe("toolPartHead", () => {
  it.each([
    [{ type: "tool", id: "prt", sessionID: "s", callID: "c", state: { status: "error" } }, "error"],
    [{ type: "tool", id: "prt", sessionID: "s", callID: "c", state: { status: "completed" } }, "completed"],
  ])("finished parts: %o", (part, status) => {
    expect(toolPartHead(part)).toEqual({ partId: "prt", sessionId: "s", callId: "c", status });
  });
  it.each([
    { type: "tool", sessionID: "s", callID: "c", state: { status: "running" } },
    { type: "tool", sessionID: "s", callID: "c", state: { status: "pending" } },
    { type: "text", sessionID: "s", text: "x" },
    { type: "tool", callID: "c", state: { status: "error" } },
    null,
    "x",
  ])("ignores %o", (part) => {
    expect(toolPartHead(part)).toBeNull();
  });
});

describe("sessionSeenOf", () => {
  it("reads id, parentID and agent from an event's info", () => {
    expect(sessionSeenOf({ info: { id: "ses_c", parentID: "ses_p", agent: "explore" } })).toEqual({
      id: "ses_c",
      parentId: "ses_p",
      agent: "explore",
      title: undefined,
      directory: undefined,
      createdAt: undefined,
    });
    expect(sessionSeenOf({ info: { id: "ses_r" } })).toEqual({
      id: "ses_r",
      parentId: null,
      agent: undefined,
      title: undefined,
      directory: undefined,
      createdAt: undefined,
    });
  });
  it.each([undefined, null, 3, {}, { info: null }, { info: { id: 5 } }])("ignores %o", (p) => {
    expect(sessionSeenOf(p)).toBeNull();
  });
});

interface Exported {
  info: Record<string, unknown>;
  messages: Array<{ info: Record<string, unknown>; parts: Array<Record<string, unknown>> }>;
}
const recorded = (name: string): Exported =>
  JSON.parse(readFileSync(join(import.meta.dirname, "../test/fixtures/recorded", name), "utf8"));

describe("events from a recorded sub-agent session", () => {
  const child = recorded("sub-agent-child.json");
  const sessionID = child.info.id as string;

  it("session.created and session.updated: id, parent, agent and what opencode shows", () => {
    for (const type of ["session.created", "session.updated"])
      expect(pluginEventOf({ id: "evt_1", type, properties: { sessionID, info: child.info } })).toEqual({
        type: "session.seen",
        session: {
          id: sessionID,
          parentId: child.info.parentID,
          agent: "general",
          title: "fix double (@general subagent)",
          directory: "/PROJECT_DIR",
          createdAt: (child.info.time as { created: number }).created,
        },
      });
  });

  it("message.updated: usage for each finished assistant message, nothing for the user's", () => {
    const seen = child.messages.map((m) =>
      pluginEventOf({ type: "message.updated", properties: { sessionID, info: m.info } }),
    );
    expect(seen[0]).toBeNull();
    const usage = seen.slice(1);
    expect(usage.every((a) => a?.type === "usage" && a.usage.sessionId === sessionID)).toBe(true);
    expect(usage).toHaveLength(child.messages.length - 1);
  });

  it("message.part.updated: finished tool parts only, with their ids", () => {
    const parts = child.messages.flatMap((m) => m.parts);
    const seen = parts.map((part) =>
      pluginEventOf({ type: "message.part.updated", properties: { sessionID, part } }),
    );
    const ended = seen.filter((a) => a !== null);
    expect(ended.map((a) => a?.type === "tool.part.ended" && a.head.callId)).toEqual(
      parts.filter((p) => p.type === "tool").map((p) => p.callID),
    );
    // A running part (streamed output) is not an end.
    const tool = parts.find((p) => p.type === "tool") as Record<string, unknown>;
    const running = { ...tool, state: { status: "running", input: {}, time: { start: 1 } } };
    expect(pluginEventOf({ type: "message.part.updated", properties: { part: running } })).toBeNull();
  });

  it("a task call names its sub-agent's session (the parent link)", () => {
    const parent = recorded("sub-agent.json");
    const task = parent.messages.flatMap((m) => m.parts).find((p) => p.tool === "task") as {
      callID: string;
      state: { input: unknown; output: string; metadata: unknown };
    };
    const got = toolFinishedOf(
      { tool: "task", sessionID: parent.info.id, callID: task.callID, args: task.state.input },
      { title: "", output: task.state.output, metadata: task.state.metadata },
    );
    expect(got?.childSessionId).toBe(sessionID);
    expect(got?.hook.sessionId).toBe(parent.info.id);
  });
});

describe("hooks from the live shapes in the opencode reference", () => {
  const ids = { sessionID: "ses_dc891d6a2ffexyQ2fNeXIsJEf5", callID: "call_1" };
  const bashArgs = { command: "echo hi; exit 3", description: "Echo hi" };

  it("tool.execute.before and after of a bash call", () => {
    expect(toolStartingOf({ tool: "bash", ...ids }, { args: bashArgs })).toEqual({
      sessionId: ids.sessionID,
      callId: "call_1",
      tool: "bash",
      bash: { command: "echo hi; exit 3", workdir: undefined },
      writePath: undefined,
    });
    const after = toolFinishedOf(
      { tool: "bash", ...ids, args: bashArgs },
      { title: "echo hi; exit 3", metadata: { output: "hi\n", exit: 3, truncated: false }, output: "hi\n" },
    );
    expect(after?.bash).toEqual({ command: "echo hi; exit 3", workdir: undefined });
    expect(after?.hook.metadata).toEqual({ output: "hi\n", exit: 3, truncated: false });
    expect(after?.childSessionId).toBeUndefined();
  });

  it("tool.execute.before of a write names the file it replaces; a read names none", () => {
    const write = toolStartingOf({ tool: "write", ...ids }, { args: { filePath: "a.ts", content: "x" } });
    expect(write?.writePath).toBe("a.ts");
    expect(write?.bash).toBeNull();
    expect(
      toolStartingOf({ tool: "read", ...ids }, { args: { filePath: "a.ts" } })?.writePath,
    ).toBeUndefined();
  });

  it("chat.headers: an agent step with its model; the title call is no step and summarizes nothing", () => {
    const model = { id: "fake-model", providerID: "fakeprov" };
    const message = { model: { providerID: "fakeprov", modelID: "fake-model" } };
    expect(llmRequestOf({ sessionID: "ses_a", agent: "build", model, message })).toEqual({
      sessionId: "ses_a",
      agent: "build",
      kind: "turn",
      model: "fake-model",
      modelRef: { providerID: "fakeprov", modelID: "fake-model" },
    });
    const title = llmRequestOf({ sessionID: "ses_a", agent: "title", model, message });
    expect([title?.kind, title?.modelRef]).toEqual(["title", null]);
    expect(headersOf({ headers: {} })).toEqual({});
  });

  it("chat.message: a typed prompt (live shape) is a user turn", () => {
    const turn = userTurnOf(
      { sessionID: "ses_dc891" },
      {
        message: { id: "msg_2376", role: "user", sessionID: "ses_dc891", agent: "build" },
        parts: [{ type: "text", text: '"please run echo hi"', id: "prt_1" }],
      },
      [],
    );
    expect(turn).toMatchObject({
      sessionId: "ses_dc891",
      messageId: "msg_2376",
      agent: "build",
      injected: false,
    });
  });

  it("session.compacted and session.deleted; session.idle and the rest are ignored", () => {
    const info = { id: "ses_x", title: "t" };
    expect(pluginEventOf({ type: "session.compacted", properties: { sessionID: "ses_x" } })).toEqual({
      type: "session.compacted",
      sessionId: "ses_x",
    });
    expect(pluginEventOf({ type: "session.deleted", properties: { sessionID: "ses_x", info } })).toEqual({
      type: "session.deleted",
      sessionId: "ses_x",
    });
    for (const type of [
      "session.idle",
      "session.status",
      "session.diff",
      "message.part.delta",
      "tui.toast.show",
    ])
      expect(
        pluginEventOf({ type, properties: { sessionID: "ses_x", status: { type: "idle" } } }),
      ).toBeNull();
  });
});

describe("junk never throws and never becomes a value", () => {
  const junk: unknown[] = [
    undefined,
    null,
    0,
    Number.NaN,
    "x",
    true,
    [],
    [1, 2],
    {},
    Object.create(null),
    { sessionID: 5, callID: {}, tool: [] },
    { sessionID: "", callID: "", tool: "" },
    { type: "tool", state: null },
    { info: null, part: "x", properties: [] },
  ];
  const types = ["message.part.updated", "message.updated", "session.created", "session.updated"];
  const eventTypes = [...types, "session.deleted", "session.compacted", 7, null];

  it.each(junk)("hook mappings with %o", (j) => {
    for (const other of junk) {
      expect(toolStartingOf(j, other)).toBeNull();
      expect(toolFinishedOf(j, other)).toBeNull();
      expect(llmRequestOf(j)).toBeNull();
      expect(userTurnOf(j, other, [])).toBeNull();
      expect(sessionIdOf(j)).toBeUndefined();
    }
  });

  it.each(junk)("events with %o as properties, or as the event", (j) => {
    expect(pluginEventOf(j)).toBeNull();
    for (const type of eventTypes) expect(pluginEventOf({ type, properties: j })).toBeNull();
    for (const type of types) {
      expect(pluginEventOf({ type, properties: { info: j, part: j } })).toBeNull();
      expect(
        pluginEventOf({
          type,
          properties: { part: { type: "tool", state: { status: "error" }, ...obj(j) } },
        }),
      ).toBeNull();
    }
  });

  it("an output that is no object gives no headers and no compaction context", () => {
    for (const j of [undefined, null, 0, "x", { headers: null }, { headers: "h" }])
      expect(headersOf(j)).toBeNull();
    for (const j of [undefined, null, 0, "x"]) expect(compactionContextOf(j)).toBeNull();
  });
});
