import { readdirSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { besideRepo } from "../../test/helpers/beside-repo.ts";
import { configSchema } from "../config.ts";
import { SessionForest } from "../forest.ts";
import { policyFromConfig } from "../policy.ts";
import type { Observation, ToolObservation } from "../types.ts";
import {
  fromToolPart,
  observationsFromMessages,
  observeOptions,
  promptTokensOf,
  type StoredMessage,
} from "./stored.ts";

const policy = policyFromConfig(configSchema.parse({}));
const opts = observeOptions(policy);
const ctx = {
  sessionId: "ses_1",
  parentId: null,
  agent: "build",
  directory: "/home/dev/repo",
  testPatterns: policy.testPatterns,
};

const real = besideRepo(["corpus", "real-trajectories"]);
const CORPUS = real.path;
const haveCorpus = real.present;

const tools = (obs: Observation[]) =>
  obs.filter((o): o is ToolObservation => o.kind === "tool").map((o) => o.call);

describe.skipIf(!haveCorpus)(real.title("stored adapter on real exported sessions"), () => {
  const files = haveCorpus ? readdirSync(CORPUS).filter((f) => /^ses_.*\.json$/.test(f)) : [];
  const load = (f: string) =>
    JSON.parse(readFileSync(`${CORPUS}/${f}`, "utf8")) as {
      info: { id: string; directory: string };
      messages: StoredMessage[];
    };

  it("turns every finished tool part into exactly one call, in order, with real exit and diff shapes", () => {
    const data = load("ses_real001.json");
    const parts = data.messages.flatMap(
      (m) => m.parts as Array<{ type: string; state?: { status: string } }>,
    );
    const finished = parts.filter(
      (p) => p.type === "tool" && ["completed", "error"].includes(p.state?.status ?? ""),
    );
    const obs = observationsFromMessages(
      { id: data.info.id, parentId: null, directory: data.info.directory },
      data.messages,
      opts,
    );
    const calls = tools(obs);
    expect(calls.length).toBe(finished.length);
    expect(calls.length).toBeGreaterThan(10);
    for (const c of calls) {
      expect(c.sessionId).toBe(data.info.id);
      expect(c.target).not.toMatch(/^\/home\/dev\/repo/);
      expect(c.fp).toMatch(/^[0-9a-f]{64}$/);
    }
    const times = calls.map((c) => c.time);
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    // the opening user message, one turn + usage per assistant message
    expect(obs[0]?.kind).toBe("user");
    const assistants = data.messages.filter((m) => (m.info as { role: string }).role === "assistant").length;
    expect(obs.filter((o) => o.kind === "turn").length).toBe(assistants);
    expect(obs.filter((o) => o.kind === "usage").length).toBe(assistants);
  });

  it("maps rejected edits to failed calls and applied edits to changes, on every corpus session", () => {
    let failed = 0;
    let changes = 0;
    for (const f of files) {
      const data = load(f);
      const calls = tools(
        observationsFromMessages(
          { id: data.info.id, parentId: null, directory: data.info.directory },
          data.messages,
          opts,
        ),
      );
      for (const c of calls) {
        if (c.tool === "edit" && c.failed) {
          failed++;
          expect(c.effect).toBe("none");
        }
        if (c.tool === "edit" && !c.failed) {
          changes++;
          expect(c.effect).toBe("change");
          expect(c.change?.fwd).toMatch(/^[0-9a-f]{64}$/);
        }
        if (c.tool === "bash") expect(c.exit === 0 || c.exit === 1).toBe(true);
      }
    }
    expect(failed).toBeGreaterThan(50);
    expect(changes).toBeGreaterThan(20);
  });

  it("never carries message text, tool input or output into observations", () => {
    const data = load("ses_real002.json");
    const obs = observationsFromMessages(
      { id: data.info.id, parentId: null, directory: data.info.directory },
      data.messages,
      opts,
    );
    const json = JSON.stringify(obs);
    const texts: string[] = [];
    for (const m of data.messages)
      for (const p of m.parts as Array<{
        type: string;
        text?: string;
        state?: { input?: Record<string, unknown>; output?: string };
      }>) {
        if (p.type === "text" && p.text && p.text.length > 30) texts.push(p.text.slice(0, 30));
        const ns = p.state?.input?.newString;
        if (typeof ns === "string" && ns.length > 30) texts.push(ns.slice(0, 30));
        if (p.state?.output && p.state.output.length > 30) texts.push(p.state.output.slice(0, 30));
      }
    expect(texts.length).toBeGreaterThan(5);
    for (const t of texts) expect(json).not.toContain(t);
  });
});

// Hand-written records in the shapes opencode-facts.md describes.
const user = (id: string, created: number, parts: unknown[], agent = "build") => ({
  info: { id, sessionID: "ses_1", role: "user", agent, time: { created } },
  parts,
});
const assistant = (id: string, created: number, parts: unknown[], extra: Record<string, unknown> = {}) => ({
  info: {
    id,
    sessionID: "ses_1",
    role: "assistant",
    agent: "build",
    providerID: "fake",
    modelID: "loop",
    cost: 0.02,
    tokens: { input: 1000, output: 50, reasoning: 0, cache: { read: 9000, write: 500 } },
    time: { created, completed: created + 500 },
    ...extra,
  },
  parts: [{ type: "step-start" }, ...parts, { type: "step-finish", tokens: {}, cost: 0.02 }],
});
const toolPart = (tool: string, input: unknown, status: string, metadata: unknown = {}, end = 0) => ({
  type: "tool",
  tool,
  callID: `call_${tool}_${end}`,
  state: { status, input, output: "OUTPUT-TEXT", title: "t", metadata, time: { start: end - 10, end } },
});

describe("stored adapter on hand-written opencode shapes", () => {
  const messages = [
    user("m0", 1000, [{ type: "text", text: "please fix the bug" }]),
    assistant("m1", 2000, [
      toolPart(
        "bash",
        { command: "pytest tests/t.py", description: "run" },
        "completed",
        { exit: 1, output: "F", truncated: false },
        2100,
      ),
      toolPart("read", { filePath: "/home/dev/repo/gone.py" }, "error", {}, 2200),
      toolPart(
        "edit",
        { filePath: "/home/dev/repo/a.py", oldString: "x", newString: "y" },
        "completed",
        { diff: "--- a.py\n+++ a.py\n-x\n+y\n" },
        2300,
      ),
      toolPart(
        "edit",
        { filePath: "/home/dev/repo/a.py", oldString: "zz", newString: "y" },
        "error",
        { diff: "" },
        2400,
      ),
      toolPart(
        "bash",
        { command: "sleep 999" },
        "completed",
        { exit: null, output: "", truncated: false },
        2450,
      ),
      toolPart("bash", { command: "pytest tests/t.py", description: "run" }, "completed", { exit: 0 }, 2500),
      toolPart("read", { filePath: "/home/dev/repo/a.py" }, "running", {}, 2600),
      toolPart("read", { filePath: "/home/dev/repo/a.py" }, "pending", {}, 2700),
    ]),
    user("m2", 3000, [{ type: "compaction", auto: true, overflow: false }]),
    assistant("m3", 3100, [{ type: "text", text: "SUMMARY-TEXT" }], {
      agent: "compaction",
      mode: "compaction",
      summary: true,
    }),
    user("m4", 4000, [
      {
        type: "text",
        text: "Continue if you have next steps",
        synthetic: true,
        metadata: { compaction_continue: true },
      },
    ]),
    user("m5", 5000, [
      { type: "text", text: "[SYSTEM DIRECTIVE: OH-MY-OPENCODE - TODO CONTINUATION]\nmore" },
    ]),
    user("m6", 6000, [{ type: "text", text: "a real question" }]),
  ];
  const obs = observationsFromMessages(
    { id: "ses_1", parentId: "ses_parent", directory: "/home/dev/repo" },
    messages,
    opts,
  );

  it("emits user turns (injected or not), compactions, turns, usage and finished tool calls in order", () => {
    expect(obs.map((o) => (o.kind === "user" ? `user:${o.injected}` : o.kind))).toEqual([
      "user:false",
      "turn",
      "usage",
      "tool",
      "tool",
      "tool",
      "tool",
      "tool",
      "tool",
      // the summary request is spend, not a turn; opencode's resume turn is no observation
      "compaction",
      "usage",
      "user:true",
      "user:false",
    ]);
  });

  it("reads status, metadata.exit and metadata.diff", () => {
    const calls = tools(obs);
    expect(calls.map((c) => [c.tool, c.exit, c.failed, c.effect])).toEqual([
      ["bash", 1, true, "test"],
      ["read", null, true, "none"],
      ["edit", null, false, "change"],
      ["edit", null, true, "none"],
      ["bash", null, true, "none"], // exit null: timed out or aborted
      ["bash", 0, false, "test"],
    ]);
    expect(calls.map((c) => c.time)).toEqual([2100, 2200, 2300, 2400, 2450, 2500]);
    expect(calls[0]?.parentId).toBe("ses_parent");
    expect(calls[1]?.target).toBe("gone.py");
  });

  it("reads model, cost and prompt tokens (input + cache read + cache write) from assistant info", () => {
    const turn = obs.find((o) => o.kind === "turn");
    expect(turn && "model" in turn ? turn.model : null).toBe("fake/loop");
    const usage = obs.find((o) => o.kind === "usage");
    expect(usage).toMatchObject({
      messageId: "m1",
      costUsd: 0.02,
      promptTokens: 10_500,
      contextTokens: 10_500,
      time: 2500,
    });
    expect(promptTokensOf({ input: 5, cache: { read: 2, write: 1 } })).toBe(8);
    expect(promptTokensOf("junk")).toBe(0);
  });

  it("a compaction summary turn keeps the session's own agent", () => {
    const agents = obs.flatMap((o) => ("agent" in o ? [o.agent] : o.kind === "tool" ? [o.call.agent] : []));
    expect(agents).not.toContain("compaction");
    const ro = observationsFromMessages(
      { id: "e", parentId: "p", directory: null },
      [
        user("u", 1, [{ type: "text", text: "look" }], "explore"),
        user("c", 2, [{ type: "compaction", auto: true }], "explore"),
        messages[3] as StoredMessage,
        assistant("a", 5, [toolPart("read", { filePath: "/x/y.py" }, "completed", {}, 6)], {
          agent: undefined,
          mode: undefined,
        }),
      ],
      opts,
    );
    expect(ro.filter((o) => o.kind === "turn")).toHaveLength(1);
    expect(ro.flatMap((o) => (o.kind === "tool" ? [o.call.agent] : []))).toEqual(["explore"]);
  });

  it("the observations drive the forest: the failing-then-passing test lands, content stays out", () => {
    const f = new SessionForest(policy);
    const events = obs.map((o) => f.observe(o).event).filter((e) => e !== null);
    expect(events.map((e) => e.landed)).toEqual([false, false, true, false, false, true]);
    const json = JSON.stringify([obs, events]);
    for (const secret of ["OUTPUT-TEXT", "SUMMARY-TEXT", "please fix", "a real question", "oldString"])
      expect(json).not.toContain(secret);
    expect(f.get("ses_1")?.signals().compactions).toBe(1);
    expect(f.get("ses_1")?.signals().injectedTotal).toBe(1);
  });

  it("fromToolPart ignores non-tool and unfinished parts and falls back for time and ids", () => {
    expect(fromToolPart({ type: "text", text: "x" }, ctx)).toBeNull();
    expect(fromToolPart(toolPart("read", {}, "running"), ctx)).toBeNull();
    const c = fromToolPart(
      { type: "tool", id: "prt_9", state: { status: "completed" } },
      { ...ctx, time: 77 },
    );
    expect(c).toMatchObject({ tool: "unknown", callId: "prt_9", time: 77, target: "unknown" });
  });
});

describe("stored adapter never crashes on malformed data", () => {
  let seed = 99;
  const rand = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  // The named keys of an opencode record, each holding junk one level deeper.
  const fields = (depth: number, ...keys: string[]) =>
    Object.fromEntries(keys.map((k) => [k, junk(depth + 1)]));
  const junk = (depth = 0): unknown => {
    const r = Math.floor(rand() * 12);
    if (depth > 3) return r % 2 ? null : "x";
    switch (r) {
      case 0:
        return null;
      case 1:
        return undefined;
      case 2:
        return rand() * 1e6 - 5e5;
      case 3:
        return Number.NaN;
      case 4:
        return "a".repeat(Math.floor(rand() * 50));
      case 5:
        return rand() > 0.5;
      case 6:
        return [junk(depth + 1), junk(depth + 1)];
      case 7:
        return { type: "tool", ...fields(depth, "tool", "state") };
      case 8:
        return {
          status: rand() > 0.5 ? "completed" : "error",
          ...fields(depth, "input", "metadata", "time"),
        };
      case 9:
        return fields(depth, "command", "filePath", "diff", "exit", "files");
      case 10:
        return { role: rand() > 0.5 ? "user" : "assistant", ...fields(depth, "agent", "time", "tokens") };
      default:
        return { type: "text", ...fields(depth, "text", "synthetic", "metadata") };
    }
  };
  const realTool = () => ({
    type: "tool",
    tool: ["bash", "read", "edit", "write", "apply_patch", "grep", "glob", "task", "todowrite", "webfetch"][
      Math.floor(rand() * 10)
    ],
    callID: junk(),
    state: {
      status: rand() > 0.5 ? "completed" : "error",
      input: {
        command: junk(),
        filePath: junk(),
        pattern: junk(),
        patchText: junk(),
        url: junk(),
        content: junk(),
      },
      metadata: { exit: junk(), diff: junk(), files: junk(), exists: junk() },
      time: { start: junk(), end: junk() },
    },
  });

  it("survives 3000 random messages and parts, and the forest survives their observations", () => {
    const f = new SessionForest(policy);
    for (let i = 0; i < 300; i++) {
      const messages = Array.from({ length: 10 }, () =>
        rand() > 0.3 ? { info: junk(), parts: [junk(), realTool(), junk(), realTool()] } : junk(),
      ) as StoredMessage[];
      const obs = observationsFromMessages(
        { id: `s${i % 7}`, parentId: i % 3 ? `s${(i + 1) % 7}` : null, directory: junk() as string },
        messages,
        opts,
      );
      for (const o of obs) expect(() => f.observe(o)).not.toThrow();
    }
    expect(observationsFromMessages({ id: "x", parentId: null }, null as never, opts)).toEqual([]);
    expect(observationsFromMessages({ id: "x", parentId: null }, "nope" as never, opts)).toEqual([]);
    for (let i = 0; i < 500; i++) expect(() => fromToolPart(junk(), ctx)).not.toThrow();
  });
});
