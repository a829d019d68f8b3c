// Landed means the agent's own change, in a busy work tree: the real opencode
// binary runs scripted sessions in a git work tree where another process
// appends a line to an untracked app.log and rewrites an untracked
// status.json every 0.3 s (a dev server), the real plugin bundle judges them
// with its work-tree probe, and the real router (behind its gate) stores the
// verdicts the assertions read. Loops that re-run a failing test with no
// edit, in a root session and in a worker, and a loop that re-runs
// `npm test > out.txt` (new timings every run) and reads it, are flagged;
// healthy test-edit-test, build-fix and a bash-only sed editor that commits
// are not. One stack and one `opencode serve` for the file.
import { type ChildProcess, spawn } from "node:child_process";
import { describe, expect, test } from "vitest";
import type { ModelReply } from "../helpers/model-server.ts";
import { scriptRouter, steps } from "../helpers/model-server.ts";
import { type PluginStack, pluginStackPerFile } from "../helpers/plugin-stack.ts";
import { routerDb, until } from "../helpers/router-db.ts";

const ADMIN = "busy-tree-admin";
const TOKEN = "busy-tree-plugin";
const COMMIT = "git -c user.name=t -c user.email=t@example.invalid commit -qam 'value 9'";
// The test fails until src/app.js says value = 9; every run prints its own timing and writes reports.
const TEST_JS = `const fs = require("node:fs");
fs.mkdirSync("coverage", { recursive: true });
fs.writeFileSync("coverage/lcov.info", String(process.hrtime.bigint()));
fs.writeFileSync("junit.xml", "<testsuite time='" + process.hrtime.bigint() + "'/>");
const ok = fs.readFileSync("src/app.js", "utf8").includes("value = 9");
console.log((ok ? "pass" : "FAIL: expected value = 9") + " in " + process.hrtime.bigint() + " ns");
process.exit(ok ? 0 : 1);
`;
// The build fails while src/lib.js has a marker left; it writes dist/ (with a timestamp) when it passes.
const BUILD_JS = `const fs = require("node:fs");
const src = fs.readFileSync("src/lib.js", "utf8");
if (src.includes("TODO")) { console.error("build error: TODO left in src/lib.js"); process.exit(2); }
fs.mkdirSync("dist", { recursive: true });
fs.writeFileSync("dist/lib.js", "// built " + Date.now() + "\\n" + src);
`;

const LIB_TODOS = [1, 2, 3, 4, 5, 6, 7, 8];

const bash = (command: string): ModelReply => ({
  kind: "tools",
  calls: [{ name: "bash", args: { command, description: "Run" } }],
});
const text = (t: string): ModelReply => ({ kind: "text", text: t });
const repeat = <T>(n: number, x: T): T[] => Array.from({ length: n }, () => x);

describe("landing in a busy work tree (another process writes into the checkout every 0.3 s)", () => {
  const router = scriptRouter();
  let stack: PluginStack;
  let appender: ChildProcess | null = null;
  const file = (rel: string) => `${stack.oc.projectDir}/${rel}`;
  const edit = (rel: string, from: string, to: string): ModelReply => ({
    kind: "tools",
    calls: [{ name: "edit", args: { filePath: file(rel), oldString: from, newString: to } }],
  });

  const { transitions, lastLanded } = routerDb(() => stack.srv.dbPath);
  const verdicts = (id: string) => transitions(id).map((t) => t.verdict);
  /** Start time of the session's last tool call. */
  async function lastCallAt(id: string): Promise<number> {
    const msgs = (await stack.oc.messages(id)) as Array<{
      parts: Array<{ type: string; state?: { time?: { start?: number } } }>;
    }>;
    const starts = msgs
      .flatMap((m) => m.parts)
      .filter((p) => p.type === "tool")
      .map((p) => p.state?.time?.start ?? 0);
    return Math.max(...starts);
  }
  /** A looping session: flagged stalling, and nothing of it ever landed. */
  async function flaggedWithoutLanding(id: string, what: string): Promise<void> {
    await until(() => verdicts(id).length > 0, what);
    expect(verdicts(id)[0]).toBe("stalling");
    expect(lastLanded(id)).toBeNull();
  }
  /** A healthy session: its last call landed (so every call before it was judged) and nothing was flagged. */
  async function healthy(id: string): Promise<void> {
    const at = await lastCallAt(id);
    await until(() => (lastLanded(id) ?? 0) >= at, "the last call to land");
    expect(verdicts(id)).toEqual([]);
  }

  pluginStackPerFile(
    {
      tmpPrefix: "sg-busy-tree-",
      script: router.script,
      adminToken: ADMIN,
      pluginToken: TOKEN,
      git: true,
      projectFiles: {
        "package.json": `${JSON.stringify({ name: "busy", private: true, scripts: { test: "node test.js" } }, null, 2)}\n`,
        Makefile: "test:\n\t@node test.js\nbuild:\n\t@node build.js\n",
        "test.js": TEST_JS,
        "build.js": BUILD_JS,
        "src/app.js": "export const value = 1;\n",
        "src/lib.js": `${LIB_TODOS.map((n) => `// TODO ${n}\n`).join("")}export const lib = 1;\n`,
      },
    },
    (s) => {
      stack = s;
      // The dev server: a line appended to app.log and status.json rewritten every 0.3 s, untracked.
      appender = spawn(
        "sh",
        [
          "-c",
          'while :; do echo "$(date +%s%N) GET /" >> app.log; echo "{\\"t\\":$(date +%s%N)}" > status.json; sleep 0.3; done',
        ],
        { cwd: stack.oc.projectDir, stdio: "ignore" },
      );
    },
    () => {
      if (appender?.pid) process.kill(appender.pid, "SIGTERM");
    },
  );

  test("a root session re-running a failing test with no edit is flagged", async () => {
    const s = await stack.oc.createSession({ title: "root test loop" });
    router.on(s.id, steps(...repeat(12, bash("make test")), text("giving up")));
    await stack.oc.prompt(s.id, "make the test pass", { timeoutMs: 180_000 });
    await flaggedWithoutLanding(s.id, "a transition");
  });

  test("a worker (task tool) re-running a failing test with no edit is flagged", async () => {
    const parent = await stack.oc.createSession({ title: "orchestrator" });
    const task = { description: "fix the test", prompt: "make the test pass", subagent_type: "general" };
    router.on(parent.id, (req) => {
      if (req.parentSessionId) return req.step < 12 ? bash("make test") : text("still failing");
      return req.step === 0 ? { kind: "tools", calls: [{ name: "task", args: task }] } : text("ok");
    });
    await stack.oc.prompt(parent.id, "delegate the fix", { timeoutMs: 180_000 });
    const child = stack.model.requests.find((r) => r.parentSessionId === parent.id)?.sessionId as string;
    expect(child).toMatch(/^ses_/);
    await flaggedWithoutLanding(child, "the worker's transition");
  });

  test("a loop re-running `npm test > out.txt` (new timings each run) and reading it is flagged", async () => {
    const s = await stack.oc.createSession({ title: "out.txt loop" });
    const round = [bash("npm test > out.txt 2>&1"), bash("cat out.txt")];
    router.on(s.id, steps(...repeat(7, round).flat(), text("giving up")));
    await stack.oc.prompt(s.id, "make the test pass", { timeoutMs: 180_000 });
    await flaggedWithoutLanding(s.id, "a transition");
  });

  test("healthy test-edit-test (edit tool, the test between edits) is not flagged", async () => {
    const s = await stack.oc.createSession({ title: "test-edit-test" });
    const plan = [1, 2, 3, 4, 5, 6, 7, 8].flatMap((v) => [
      bash("make test"),
      edit("src/app.js", `value = ${v}`, `value = ${v + 1}`),
    ]);
    router.on(s.id, steps(...plan, bash("make test"), text("done")));
    await stack.oc.prompt(s.id, "fix the value", { timeoutMs: 180_000 });
    await healthy(s.id);
    // Put the value back for the sessions after this one.
    await new Promise<void>((done) =>
      spawn("git", ["checkout", "--", "src/app.js"], { cwd: stack.oc.projectDir }).on("close", () => done()),
    );
  });

  test("healthy build-fix (the build fails, an edit, the build again, then a commit) is not flagged", async () => {
    const s = await stack.oc.createSession({ title: "build-fix" });
    const plan = LIB_TODOS.flatMap((n) => [bash("make build"), edit("src/lib.js", `// TODO ${n}\n`, "")]);
    router.on(s.id, steps(...plan, bash("make build"), bash(COMMIT), text("built")));
    await stack.oc.prompt(s.id, "fix the build", { timeoutMs: 180_000 });
    expect(stack.model.errors).toEqual([]);
    await healthy(s.id);
  });

  test("a bash-only editor that changes sources with sed -i and commits is not flagged", async () => {
    const s = await stack.oc.createSession({ title: "sed editor" });
    const plan = [2, 3, 4, 5, 6, 7, 8, 9].flatMap((v) => [
      bash(`sed -i 's/value = [0-9]*/value = ${v}/' src/app.js`),
      bash("make test"),
    ]);
    router.on(s.id, steps(...plan, bash(COMMIT), text("done")));
    await stack.oc.prompt(s.id, "fix the value with sed", { timeoutMs: 180_000 });
    expect(stack.model.errors).toEqual([]);
    await healthy(s.id);
  });
});
