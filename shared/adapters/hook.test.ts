import { describe, expect, it } from "vitest";
import { configSchema } from "../config.ts";
import { SessionForest } from "../forest.ts";
import { shortHash } from "../hash.ts";
import { policyFromConfig } from "../policy.ts";
import type { ToolCall } from "../types.ts";
import { fromToolHook } from "./hook.ts";
import { fromToolPart } from "./stored.ts";

const policy = policyFromConfig(configSchema.parse({}));
const DIR = "/home/dev/repo";
const ctx = {
  parentId: "ses_parent",
  agent: "Sisyphus-Junior",
  time: 42,
  directory: DIR,
  testPatterns: policy.testPatterns,
};

function hook(tool: string, args: unknown, metadata: unknown, title = "t", output = "OUTPUT-BODY"): ToolCall {
  return fromToolHook(
    { tool, sessionID: "ses_c", callID: `call_${tool}`, args },
    { title, output, metadata },
    ctx,
  );
}

// tool.execute.after shapes as opencode 1.18.33 sends them (opencode-facts.md)
const shapes = {
  read: hook(
    "read",
    { filePath: `${DIR}/admin/frontend/navbar.js`, offset: 100, limit: 50 },
    {
      preview: "PREVIEW-BODY",
      truncated: false,
      loaded: [],
      display: { type: "file", path: "navbar.js", lineStart: 100, lineEnd: 150, totalLines: 900 },
    },
  ),
  bash: hook(
    "bash",
    { command: "git commit -m 'x'", description: "commit" },
    { output: "OUTPUT-BODY", exit: 0, truncated: false },
  ),
  bashFail: hook(
    "bash",
    { command: "false", description: "fail" },
    { output: "", exit: 1, truncated: false },
  ),
  edit: hook(
    "edit",
    { filePath: `${DIR}/a.py`, oldString: "OLD-BODY", newString: "NEW-BODY" },
    {
      diff: `Index: ${DIR}/a.py\n===\n--- ${DIR}/a.py\n+++ ${DIR}/a.py\n@@ -1 +1 @@\n-OLD-BODY\n+NEW-BODY\n`,
      filediff: { file: `${DIR}/a.py`, patch: "-OLD-BODY\n+NEW-BODY", additions: 1, deletions: 1 },
      diagnostics: {},
    },
  ),
  editNoop: hook(
    "edit",
    { filePath: `${DIR}/a.py`, oldString: "x", newString: "x" },
    { diff: "", filediff: {} },
  ),
  write: hook(
    "write",
    { filePath: `${DIR}/new.py`, content: "WRITE-BODY" },
    { diagnostics: {}, filepath: `${DIR}/new.py`, exists: false },
  ),
  patch: hook(
    "apply_patch",
    { patchText: "*** Begin Patch\n*** Update File: src/x.ts\n@@\n-PATCH-OLD\n+PATCH-NEW\n*** End Patch" },
    {
      diff: "--- src/x.ts\n+++ src/x.ts\n-PATCH-OLD\n+PATCH-NEW\n",
      files: [{ filePath: `${DIR}/src/x.ts`, relativePath: "src/x.ts", type: "update" }],
    },
  ),
  task: hook(
    "task",
    { subagent_type: "explore", description: "look around", prompt: "TASK-PROMPT" },
    {
      parentSessionId: "ses_c",
      sessionId: "ses_kid",
      model: { providerID: "fake", modelID: "loop" },
      summary: [],
    },
  ),
  todowrite: hook(
    "todowrite",
    { todos: [{ id: "1", content: "TODO-BODY", status: "in_progress", priority: "high" }] },
    { todos: [] },
  ),
  grep: hook(
    "grep",
    { pattern: "GREP-PATTERN", path: `${DIR}/src`, include: "*.ts" },
    { matches: 4, truncated: false },
  ),
  glob: hook("glob", { pattern: "**/*.GLOBPAT", path: DIR }, { count: 2, truncated: false }),
};

describe("fromToolHook on tool.execute.after shapes", () => {
  it("carries session, parent, agent (slugged), call id, time, and always status completed", () => {
    for (const c of Object.values(shapes)) {
      expect(c.sessionId).toBe("ses_c");
      expect(c.parentId).toBe("ses_parent");
      expect(c.agent).toBe("sisyphus-junior");
      expect(c.time).toBe(42);
      expect(c.callId).toBe(`call_${c.tool}`);
    }
    expect(shapes.read.failed).toBe(false);
  });

  it("maps each tool to its target, exit and effect", () => {
    const row = (c: ToolCall) => [c.target, c.exit, c.failed, c.effect];
    expect(row(shapes.read)).toEqual(["admin/frontend/navbar.js", null, false, "none"]);
    expect(row(shapes.bash)).toEqual(["git commit", 0, false, "commit"]);
    expect(row(shapes.bashFail)).toEqual(["false", 1, true, "none"]);
    expect(row(shapes.edit)).toEqual(["a.py", null, false, "change"]);
    expect(row(shapes.editNoop)).toEqual(["a.py", null, false, "none"]);
    expect(row(shapes.write)).toEqual(["new.py", null, false, "change"]);
    expect(shapes.write.write).toMatchObject({ path: "new.py", existed: false });
    expect(row(shapes.patch)).toEqual(["src/x.ts", null, false, "change"]);
    expect(row(shapes.task)).toEqual(["agent:explore", null, false, "none"]);
    expect(row(shapes.todowrite)).toEqual(["todos", null, false, "none"]);
    expect(row(shapes.grep)).toEqual([`src #${shortHash("GREP-PATTERN")}`, null, false, "none"]);
    expect(row(shapes.glob)).toEqual([`. #${shortHash("**/*.GLOBPAT")}`, null, false, "none"]);
  });

  it("reads the exit code from metadata.exit only (never output.exitCode / exit_code)", () => {
    const c = fromToolHook(
      { tool: "bash", sessionID: "s", callID: "c", args: { command: "make" } },
      { metadata: { output: "" }, exitCode: 3, exit_code: 3 } as never,
      ctx,
    );
    expect([c.exit, c.failed]).toEqual([null, false]);
  });

  it("gives the same call as the stored adapter for the same tool and args", () => {
    const stored = fromToolPart(
      {
        type: "tool",
        tool: "edit",
        callID: "call_edit",
        state: {
          status: "completed",
          input: { filePath: `${DIR}/a.py`, oldString: "OLD-BODY", newString: "NEW-BODY" },
          metadata: { diff: `--- ${DIR}/a.py\n+++ ${DIR}/a.py\n-OLD-BODY\n+NEW-BODY\n` },
          time: { start: 1, end: 42 },
        },
      },
      { ...ctx, sessionId: "ses_c" },
    );
    expect(stored).not.toBeNull();
    const { fp, nfp, target, effect, change } = stored as ToolCall;
    expect({ fp, nfp, target, effect, change }).toEqual({
      fp: shapes.edit.fp,
      nfp: shapes.edit.nfp,
      target: shapes.edit.target,
      effect: shapes.edit.effect,
      change: shapes.edit.change,
    });
  });

  it("keeps no content: args, titles, outputs and previews stay out", () => {
    const json = JSON.stringify(shapes);
    for (const body of [
      "OUTPUT-BODY",
      "PREVIEW-BODY",
      "OLD-BODY",
      "NEW-BODY",
      "WRITE-BODY",
      "PATCH-OLD",
      "TASK-PROMPT",
      "TODO-BODY",
      "GREP-PATTERN",
      "GLOBPAT",
      "look around",
    ])
      expect(json).not.toContain(body);
  });

  it("feeds the forest: edit, write, patch and commit land; the rest do not", () => {
    const f = new SessionForest(policy);
    const landed = Object.entries(shapes).map(([k, c]) => [
      k,
      f.observe({ kind: "tool", call: c }).event?.landed,
    ]);
    expect(Object.fromEntries(landed)).toEqual({
      read: false,
      bash: true,
      bashFail: false,
      edit: true,
      editNoop: false,
      write: true,
      patch: true,
      task: false,
      todowrite: false,
      grep: false,
      glob: false,
    });
  });

  it("never throws on a malformed payload", () => {
    const bad: unknown[] = [
      null,
      undefined,
      5,
      "x",
      [],
      { tool: 7 },
      { tool: "bash", args: "rm -rf" },
      { tool: null, sessionID: {}, callID: [] },
    ];
    for (const input of bad)
      for (const output of [null, undefined, 3, { metadata: "m" }, { metadata: { exit: "1", diff: 5 } }]) {
        const c = fromToolHook(input as never, output as never, ctx);
        expect(typeof c.fp).toBe("string");
        expect(typeof c.tool).toBe("string");
      }
  });
});
