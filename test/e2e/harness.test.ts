// Proves the e2e harness drives the real opencode binary: real tool calls, the
// headers opencode sends, sub-agents, failed tools, plugin loading and events.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ModelServer, scriptRouter, startModelServer, steps } from "../helpers/model-server.ts";
import { type OpencodeServer, runOpencode, startOpencode } from "../helpers/opencode.ts";

// Sets headers on every model call; the second proves `import "@opencode-ai/plugin"`
// resolves through the pre-seeded node_modules.
const PROBE_PLUGIN = `import { tool } from "@opencode-ai/plugin";
export const Probe = async () => ({
  "chat.headers": async (input, output) => {
    output.headers["x-probe"] = "1";
    output.headers["x-probe-import"] = typeof tool;
  },
});
`;

// biome-ignore lint/suspicious/noExplicitAny: raw API JSON
type Part = any;

function toolParts(msgs: Array<{ parts: Part[] }>): Part[] {
  return msgs.flatMap((m) => m.parts).filter((p) => p.type === "tool");
}

function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const t0 = Date.now();
  return fn().finally(() => console.log(`[timing] ${label}: ${Date.now() - t0} ms`));
}

describe("opencode harness (real binary)", () => {
  const router = scriptRouter();
  let model: ModelServer;
  let oc: OpencodeServer;
  let probeDir: string;

  beforeAll(async () => {
    probeDir = mkdtempSync(join(tmpdir(), "stallguard-probe-"));
    writeFileSync(join(probeDir, "probe.js"), PROBE_PLUGIN);
    model = await startModelServer({
      script: router.script,
      usage: { prompt_tokens: 1000, completion_tokens: 20, cached_tokens: 400 },
    });
    oc = await startOpencode({
      modelUrl: model.url,
      plugins: [join(probeDir, "probe.js")],
      projectFiles: { "README.md": "# scratch project\n" },
      git: true,
    });
    console.log(`[timing] opencode serve start-up (with plugin): ${oc.startupMs} ms`);
  });

  afterAll(async () => {
    await oc?.stop();
    await model?.close();
    if (probeDir) rmSync(probeDir, { recursive: true, force: true });
  });

  test("runs write, read and bash for real, then a text reply", async () => {
    // No title here: opencode only generates a title (one extra request) for untitled sessions.
    const s = await oc.createSession();
    const file = join(oc.projectDir, "notes.txt");
    router.on(
      s.id,
      steps(
        { kind: "tools", calls: [{ name: "write", args: { filePath: file, content: "hello harness\n" } }] },
        { kind: "tools", calls: [{ name: "read", args: { filePath: file } }] },
        {
          kind: "tools",
          calls: [{ name: "bash", args: { command: "echo out; exit 3", description: "Exit 3" } }],
        },
        { kind: "text", text: "All done." },
      ),
    );
    await timed("session with 3 tool calls", () => oc.prompt(s.id, "write, read, run"));

    expect(readFileSync(file, "utf8")).toBe("hello harness\n");
    const msgs = await oc.messages(s.id);
    const tools = toolParts(msgs);
    expect(tools.map((p) => [p.tool, p.state.status])).toEqual([
      ["write", "completed"],
      ["read", "completed"],
      ["bash", "completed"],
    ]);
    expect(tools[2].state.metadata.exit).toBe(3);
    expect(tools[2].state.output).toContain("out");
    const last = msgs[msgs.length - 1];
    expect(last?.info.finish).toBe("stop");
    expect(last?.parts.find((p: Part) => p.type === "text")?.text).toBe("All done.");
    // Usage from the final SSE chunk reaches opencode's token accounting.
    expect(last?.info.tokens.cache.read).toBe(400);

    const mine = model.requests.filter((r) => r.sessionId === s.id && !r.isTitle);
    expect(mine.map((r) => r.step)).toEqual([0, 1, 2, 3]);
    const results = mine[3]?.toolResults ?? [];
    expect(results).toHaveLength(3);
    expect(results[1]?.content).toContain("hello harness");
  });

  test("every request carries x-session-id and title requests are told apart", () => {
    expect(model.requests.length).toBeGreaterThan(0);
    for (const r of model.requests) {
      expect(r.sessionId).toMatch(/^ses_/);
      expect(r.headers["x-session-affinity"]).toBe(r.sessionId);
      expect(r.headers["user-agent"]).toMatch(/^opencode\/\d/);
    }
    const titles = model.requests.filter((r) => r.isTitle);
    expect(titles.length).toBe(1);
    for (const t of titles) {
      expect(t.toolNames).toEqual([]);
      expect(t.body.messages[0].content).toMatch(/^You are a title generator/);
    }
    expect(model.requests.filter((r) => !r.isTitle).every((r) => r.toolNames.includes("bash"))).toBe(true);
  });

  test("a task tool call runs a child session with x-parent-session-id", async () => {
    const parent = await oc.createSession({ title: "parent" });
    router.on(parent.id, (req) => {
      if (req.parentSessionId) {
        return req.step === 0
          ? { kind: "tools", calls: [{ name: "bash", args: { command: "echo child", description: "Echo" } }] }
          : { kind: "text", text: "child done" };
      }
      const task = { description: "child task", prompt: "do the child work", subagent_type: "general" };
      return req.step === 0
        ? { kind: "tools", calls: [{ name: "task", args: task }] }
        : { kind: "text", text: "parent done" };
    });
    await timed("session with a sub-agent", () => oc.prompt(parent.id, "delegate"));

    // A session created with a title gets no title request; neither does the child.
    expect(model.requests.filter((r) => r.isTitle && r.sessionId === parent.id)).toEqual([]);
    const childReqs = model.requests.filter((r) => r.parentSessionId === parent.id);
    expect(childReqs.map((r) => [r.step, r.isTitle])).toEqual([
      [0, false],
      [1, false],
    ]);
    const childId = childReqs[0]?.sessionId;
    expect(childId).toMatch(/^ses_/);
    expect(childId).not.toBe(parent.id);
    expect(
      childReqs.every((r) => r.sessionId === childId && r.headers["x-parent-session-id"] === parent.id),
    ).toBe(true);
    const child = (await oc.sessions()).find((x) => x.id === childId);
    expect(child?.parentID).toBe(parent.id);
    const task = toolParts(await oc.messages(parent.id)).find((p) => p.tool === "task");
    expect(task?.state.status).toBe("completed");
    expect(task?.state.metadata.sessionId).toBe(childId);
    expect(task?.state.output).toContain("child done");
  });

  test("a failed tool is an error part; repeated external reads do not block (async)", async () => {
    const s = await oc.createSession();
    const missing = join(oc.projectDir, "does-not-exist.txt");
    // Outside the project, and 3 identical calls in one response: external_directory
    // and doom_loop would both ask (and hang headless) without the harness's permissions.
    const outside = { name: "read", args: { filePath: join(probeDir, "probe.js") } };
    router.on(
      s.id,
      steps(
        { kind: "tools", calls: [{ name: "read", args: { filePath: missing } }] },
        { kind: "tools", calls: [outside, outside, outside] },
        { kind: "text", text: "gave up" },
      ),
    );
    await timed("session with a failed tool and 3 repeated calls (async)", async () => {
      await oc.promptAsync(s.id, "read a missing file");
      await oc.waitIdle(s.id, 60_000);
    });
    const tools = toolParts(await oc.messages(s.id));
    expect(tools.map((p) => p.state.status)).toEqual(["error", "completed", "completed", "completed"]);
    expect(String(tools[0]?.state.error)).toMatch(/not found|no such file|does not exist/i);
  });

  test("a compaction summary request is told apart", async () => {
    const s = await oc.createSession({ title: "compact" });
    router.on(s.id, steps({ kind: "text", text: "nothing to do" }));
    await oc.prompt(s.id, "hello");
    const before = model.requests.length;
    await timed("POST /session/{id}/summarize", () =>
      oc.api("POST", `/session/${s.id}/summarize`, { providerID: "fake", modelID: "loop" }, 60_000),
    );
    const [summary, ...rest] = model.requests.slice(before);
    expect(rest).toEqual([]);
    expect(summary?.isCompaction).toBe(true);
    expect(summary?.isTitle).toBe(false);
    expect(summary?.toolNames).toEqual([]);
    expect(summary?.sessionId).toBe(s.id);
    expect(summary?.lastUserText).toMatch(/^Here is the conversation so far/);
    expect(model.requests.slice(0, before).some((r) => r.isCompaction)).toBe(false);
  });

  test("the plugin is loaded and start-up did not wait on npm", async () => {
    expect(model.requests.length).toBeGreaterThan(0);
    for (const r of model.requests) {
      expect(r.headers["x-probe"]).toBe("1");
      expect(r.headers["x-probe-import"]).toBe("function");
    }
    // Not waiting on npm is shown by the lockfile below, not by a start-up time (which follows the load).
    console.log(`[harness] opencode serve started in ${oc.startupMs} ms`);
    expect(oc.output()).not.toMatch(/dependency install failed/);
    // The seeded lockfile must still be ours: opencode did not reinstall.
    const lock = JSON.parse(readFileSync(join(oc.projectDir, ".opencode", "package-lock.json"), "utf8"));
    expect(Object.keys(lock.packages)).toEqual([""]);
  });

  test("the event stream sees a toast posted to /tui/show-toast", async () => {
    const events = oc.events();
    await events.ready;
    await oc.api("POST", "/tui/show-toast", { title: "probe", message: "hello", variant: "info" });
    const toast = await events.waitFor((e) => e.type === "tui.toast.show", 10_000);
    expect(toast.properties.message).toBe("hello");
    events.stop();
  });

  test("runOpencode runs `opencode run` to completion", async () => {
    const run = await timed("opencode run (own process)", () =>
      runOpencode({ modelUrl: model.url, message: "say hi", timeoutMs: 60_000 }),
    );
    try {
      expect(run.code).toBe(0);
      expect(run.stdout).toContain("ok");
      expect(existsSync(run.dbPath)).toBe(true);
    } finally {
      run.cleanup();
    }
  });
});

describe("model server (no opencode)", () => {
  let model: ModelServer;
  beforeAll(async () => {
    model = await startModelServer({
      usage: { prompt_tokens: 7, completion_tokens: 3, cached_tokens: 2 },
      script: (r) => {
        if (r.lastUserText === "hang") return { kind: "hang" };
        if (r.lastUserText !== "err")
          return { kind: "tools", calls: [{ name: "bash", args: { command: "true" } }] };
        const body = { error: { message: "slow down" } };
        return { kind: "http", status: 429, body, headers: { "retry-after": "1" } };
      },
    });
  });
  afterAll(() => model.close());

  const post = (body: unknown) =>
    fetch(`${model.url}/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": "ses_x" },
      body: JSON.stringify({
        tools: [{ type: "function", function: { name: "bash" } }],
        ...(body as object),
      }),
    });

  test("streams tool-call chunks and a usage chunk", async () => {
    const res = await post({ stream: true, stream_options: { include_usage: true }, messages: [] });
    const lines = (await res.text()).split("\n").filter((l) => l.startsWith("data: "));
    expect(lines.at(-1)).toBe("data: [DONE]");
    const chunks = lines.slice(0, -1).map((l) => JSON.parse(l.slice(6)));
    expect(chunks.every((c) => c.object === "chat.completion.chunk")).toBe(true);
    const args = chunks
      .flatMap((c) => c.choices.flatMap((ch: Part) => ch.delta?.tool_calls ?? []))
      .map((t: Part) => t.function?.arguments ?? "")
      .join("");
    expect(JSON.parse(args)).toEqual({ command: "true" });
    expect(chunks.find((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason).toBe("tool_calls");
    expect(chunks.at(-1).usage.prompt_tokens_details.cached_tokens).toBe(2);
    expect(model.requests[0]?.sessionId).toBe("ses_x");
  });

  test("answers non-streaming requests and plain HTTP errors", async () => {
    const json = await (await post({ stream: false, messages: [] })).json();
    expect(json.object).toBe("chat.completion");
    expect(json.choices[0].message.tool_calls[0].function.name).toBe("bash");
    const err = await post({ messages: [{ role: "user", content: "err" }] });
    expect(err.status).toBe(429);
    expect(err.headers.get("retry-after")).toBe("1");
  });

  test("a hanging reply is cut by close()", async () => {
    const pending = post({ stream: true, messages: [{ role: "user", content: "hang" }] });
    await expect.poll(() => model.requests.some((r) => r.lastUserText === "hang")).toBe(true);
    await model.close();
    await expect(pending).rejects.toThrow();
  });
});
