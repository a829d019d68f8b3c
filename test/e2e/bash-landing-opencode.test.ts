// Changes made through bash land, live: the real opencode binary runs a
// scripted session's bash calls in a real git work tree, the real plugin
// bundle judges them (with its work-tree probe) and reports to the real
// router, whose SQLite file the assertions read. One stack for the file, one
// session per scenario.
import { describe, expect, test } from "vitest";
import { configSchema, policyFromConfig, replay, type StoredMessage } from "../../shared/index.ts";
import type { ModelReply } from "../helpers/model-server.ts";
import { scriptRouter, steps } from "../helpers/model-server.ts";
import { type PluginStack, pluginStackPerFile } from "../helpers/plugin-stack.ts";
import { routerDb, until } from "../helpers/router-db.ts";

const policy = policyFromConfig(configSchema.parse({}));
const ADMIN = "bash-landing-admin";
const TOKEN = "bash-landing-plugin";
// Fails until the file says value=9; not a test command by the config's patterns,
// so only a landed change can tell its reruns apart from a loop.
const check = (file: string) => `sh check.sh ${file}`;
const COMMIT = "git -c user.name=t -c user.email=t@example.invalid commit -qam 'value 9'";

const bash = (command: string): ModelReply => ({
  kind: "tools",
  calls: [{ name: "bash", args: { command, description: "Run" } }],
});
const text = (t: string): ModelReply => ({ kind: "text", text: t });

describe("bash edits land in real opencode", () => {
  const router = scriptRouter();
  let stack: PluginStack;

  const { transitions, lastLanded } = routerDb(() => stack.srv.dbPath);
  type ToolPart = {
    type: string;
    tool?: string;
    state: { input: { command?: string }; time: { start: number } };
  };
  async function toolParts(id: string): Promise<ToolPart[]> {
    const msgs = (await stack.oc.messages(id)) as Array<{ parts: ToolPart[] }>;
    return msgs.flatMap((m) => m.parts).filter((p) => p.type === "tool");
  }
  /** The plugin has judged every call up to the commit: the commit is its latest landing. */
  async function judgedThroughCommit(id: string): Promise<void> {
    const commit = (await toolParts(id)).find((p) => p.state.input.command === COMMIT);
    expect(commit).toBeDefined();
    await until(() => (lastLanded(id) ?? 0) >= (commit?.state.time.start ?? Infinity), "the commit to land");
  }

  pluginStackPerFile(
    {
      tmpPrefix: "sg-bash-landing-",
      script: router.script,
      adminToken: ADMIN,
      pluginToken: TOKEN,
      git: true,
      projectFiles: {
        "app.txt": "value=1\n",
        "lib.txt": "value=1\n",
        "never.txt": "value=1\n",
        "check.sh": 'grep -q "value=9" "$1"\n',
        "bump.sh": 'sed -i "s/value=[0-9]*/value=$1/" "$2"\n',
      },
    },
    (s) => {
      stack = s;
    },
  );

  test("a session that edits only through sed -i, rerunning a failing check between edits, and commits is never flagged", async () => {
    const s = await stack.oc.createSession({ title: "sed editor" });
    const edits = [2, 3, 4, 5, 6, 7, 8, 9].flatMap((v) => [
      bash(`sed -i 's/value=[0-9]*/value=${v}/' app.txt`),
      bash(check("app.txt")),
    ]);
    router.on(s.id, steps(...edits, bash(COMMIT), text("done")));
    await stack.oc.prompt(s.id, "fix the value", { timeoutMs: 180_000 });

    const parts = await toolParts(s.id);
    expect(parts).toHaveLength(17);
    await judgedThroughCommit(s.id);
    // Eight reruns of one failing command with nothing landing between would be flagged (see the next test).
    expect(transitions(s.id)).toEqual([]);
    expect(stack.model.errors).toEqual([]);
    // The same session as calibrate replays it (no work tree: the command heuristic) agrees.
    const [r] = replay(
      [
        {
          id: s.id,
          parentId: null,
          directory: null,
          messages: (await stack.oc.messages(s.id)) as StoredMessage[],
        },
      ],
      policy,
    );
    expect(r?.worst).toBe("ok");
    expect(r?.landed).toBe(9);
  });

  test("edits made by a script the command does not show (sh bump.sh runs sed -i) land through the probe", async () => {
    const s = await stack.oc.createSession({ title: "script editor" });
    const plan = [2, 3, 4, 5, 6, 7, 8, 9].flatMap((v) => [
      bash(`sh bump.sh ${v} lib.txt`),
      bash(check("lib.txt")),
    ]);
    let sentAt = 0;
    router.on(s.id, async (req) => {
      // The model's turn after a bump takes until the router has seen it land:
      // a real model's turn is far longer than the probe, this one only as long as it must be.
      if (sentAt > 0) {
        const since = sentAt;
        sentAt = 0;
        await until(() => (lastLanded(s.id) ?? 0) >= since, "the bump to land");
      }
      const reply = plan[req.step] ?? (req.step === plan.length ? bash(COMMIT) : text("done"));
      if (reply.kind === "tools" && String(reply.calls[0]?.args.command).startsWith("sh bump.sh"))
        sentAt = Date.now();
      return reply;
    });
    await stack.oc.prompt(s.id, "fix the value with the script", { timeoutMs: 180_000 });
    expect(stack.model.errors).toEqual([]);
    await judgedThroughCommit(s.id);
    expect(transitions(s.id)).toEqual([]);
  });

  test("a bash loop rerunning the same failing command with no change is flagged through the router", async () => {
    const s = await stack.oc.createSession({ title: "loop" });
    router.on(s.id, steps(...Array.from({ length: 12 }, () => bash(check("never.txt"))), text("giving up")));
    await stack.oc.prompt(s.id, "make the check pass", { timeoutMs: 180_000 });
    expect(await toolParts(s.id)).toHaveLength(12);
    await until(() => transitions(s.id).length > 0, "a transition");
    const [first] = transitions(s.id);
    expect(first).toMatchObject({ verdict: "stalling", source: "plugin" });
    expect(lastLanded(s.id)).toBeNull();
  });
});
