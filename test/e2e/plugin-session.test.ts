// The plugin inside the real opencode binary (one `opencode serve` for the
// file, one session per scenario), driven by the scripted model server and
// reporting to a real /progress receiver that validates every body with the
// wire schema. Proves: identity headers on every request, the sensor on both
// paths (failed tools arrive only as part errors), the judge with roll-up,
// transitions and toasts, privacy, and a router that is down or hanging.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Receiver, startReceiver } from "../../plugin/_test-receiver.ts";
import { configSchema, type ProgressMessage, type Transition } from "../../shared/index.ts";
import {
  type ModelReply,
  type ModelServer,
  type Script,
  scriptRouter,
  startModelServer,
  steps,
} from "../helpers/model-server.ts";
import { type EventStream, type OpencodeServer, REPO, startOpencode } from "../helpers/opencode.ts";

const BUNDLE = join(REPO, "dist", "plugin", "stallguard.js");
const VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;
const TOKEN = "test-token-0123";
// The shipped thresholds (config/config.yaml): the expectations follow them, not copies of them.
const T = configSchema.parse({}).thresholds;

// Unique strings planted in the prompt, file contents, edit strings, bash
// arguments past the first two tokens, env assignments and command output.
const MARK = {
  prompt: "PRIVPROMPT7731",
  file: "PRIVFILE5521",
  edit: "PRIVEDIT9034",
  write: "PRIVWRITE2217",
  arg: "PRIVARG6650",
  env: "PRIVENV4408",
  commit: "PRIVCOMMIT3390",
  output: "PRIVOUT_42", // printed by $((40+2)): never in the arguments
};

// biome-ignore lint/suspicious/noExplicitAny: raw API JSON
type Part = any;

const read = (filePath: string): ModelReply => ({
  kind: "tools",
  calls: [{ name: "read", args: { filePath } }],
});
const bash = (command: string): ModelReply => ({
  kind: "tools",
  calls: [{ name: "bash", args: { command, description: "Run" } }],
});
const text = (t: string): ModelReply => ({ kind: "text", text: t });
const repeat = <T>(n: number, r: T): T[] => Array.from({ length: n }, () => r);

function toolParts(msgs: Array<{ parts: Part[] }>): Part[] {
  return msgs.flatMap((m) => m.parts).filter((p) => p.type === "tool");
}

describe("stallguard plugin in real opencode", () => {
  const router = scriptRouter();
  let model: ModelServer, receiver: Receiver, oc: OpencodeServer, events: EventStream;

  const transitionsFor = (sessionId: string): Transition[] =>
    receiver.messages.filter((m): m is Transition => m.type === "transition" && m.session_id === sessionId);
  const toastsFor = (sessionId: string) =>
    events.events.filter(
      (e) => e.type === "tui.toast.show" && String(e.properties?.message ?? "").includes(sessionId),
    );

  async function run(sessionId: string, script: Script, prompt: string): Promise<number> {
    router.on(sessionId, script);
    const t0 = Date.now();
    await oc.prompt(sessionId, prompt, { timeoutMs: 180_000 });
    return Date.now() - t0;
  }

  beforeAll(async () => {
    receiver = await startReceiver({ token: TOKEN });
    model = await startModelServer({
      script: router.script,
      usage: { prompt_tokens: 2000, completion_tokens: 20 },
    });
    oc = await startOpencode({
      modelUrl: model.url,
      plugins: [BUNDLE],
      git: true,
      env: {
        STALLGUARD_URL: receiver.url,
        STALLGUARD_TOKEN: TOKEN,
        STALLGUARD_HEARTBEAT_MS: "1000",
      },
      // A price, so "$ since landed" is not always zero.
      opencodeConfig: {
        provider: { fake: { models: { loop: { cost: { input: 3, output: 15 } } } } },
      },
      projectFiles: {
        "README.md": "# scratch project\n",
        "plan.md": "- [ ] step one\n",
        "app.txt": `value=1 ${MARK.file}\n`,
        "check.mjs":
          'import { readFileSync } from "node:fs";\nprocess.exit(readFileSync("app.txt", "utf8").includes("value=2") ? 0 : 1);\n',
        "package.json": '{ "name": "scratch", "private": true, "scripts": { "test": "node check.mjs" } }\n',
      },
    });
    events = oc.events();
    await events.ready;
  });

  afterAll(async () => {
    events?.stop();
    await oc?.stop();
    await model?.close();
    await receiver?.close();
  });

  /** Waits until a heartbeat reports a landed change for the session (the queue has delivered it). */
  const landedInHeartbeat = (id: string) =>
    expect
      .poll(
        () =>
          receiver.messages.some(
            (m) =>
              m.type === "heartbeat" &&
              m.sessions.some((x) => x.session_id === id && x.last_landed_at !== null),
          ),
        { timeout: 10_000 },
      )
      .toBe(true);

  test("a worker re-reading one file goes ok -> stalling -> looping, reported and toasted", async () => {
    const s = await oc.createSession({ title: "reread" });
    const file = join(oc.projectDir, "README.md");
    await run(s.id, steps(...repeat(26, read(file)), text("done")), `read it ${MARK.prompt}`);

    await expect
      .poll(() => transitionsFor(s.id).map((t) => t.verdict), { timeout: 15_000 })
      .toContain("looping");
    const ts = transitionsFor(s.id);
    expect(ts.map((t) => `${t.previous}>${t.verdict}`)).toEqual(["ok>stalling", "stalling>looping"]);
    for (const t of ts) {
      expect(t.source).toBe("plugin");
      expect(t.agent).toBe("build");
      expect(t.root_id).toBe(s.id);
      expect(t.parent_id).toBeNull();
      expect(t.plugin_version).toBe(VERSION);
      expect(t.top_target).toBe("read README.md");
      expect(t.report).toContain(s.id);
      expect(t.signals.landed).toBe(0);
    }
    // Stalling at row_warn repeats of the same read in a row; looping once the same call with
    // the same answer came cum_loop times since anything landed (before loop_turns).
    const t = configSchema.parse({}).thresholds;
    expect(ts[0]?.top_target_count).toBe(t.row_warn + 1);
    expect(ts[0]?.reason).toBe("in_a_row");
    expect(ts[0]?.evidence?.in_a_row).toEqual({ target: "read README.md", period: 1, repeats: t.row_warn });
    expect(ts[1]?.top_target_count).toBe(t.cum_loop);
    expect(ts[1]?.reason).toBe("whole_session");
    await expect.poll(() => toastsFor(s.id).length, { timeout: 10_000 }).toBe(2);
    const [warn, loop] = toastsFor(s.id);
    expect(warn?.properties.variant).toBe("warning");
    expect(loop?.properties.title).toBe("stallguard: looping");
    expect(loop?.properties.message).toMatch(
      /build looping: \d+ turns, \$\d+\.\d\d since landed; top: read README\.md x\d+/,
    );
  });

  test("an explore sub-agent reading a missing file is flagged from failed reads alone, with its root", async () => {
    const parent = await oc.createSession({ title: "explore parent" });
    const READS = T.fail_loop + 2;
    const missing = join(oc.projectDir, "deleted-module.js");
    const task = { description: "look around", prompt: "find the module", subagent_type: "explore" };
    router.on(parent.id, (req) => {
      if (req.parentSessionId) return req.step < READS ? read(missing) : text("not found");
      return req.step === 0 ? { kind: "tools", calls: [{ name: "task", args: task }] } : text("ok");
    });
    await oc.prompt(parent.id, "explore", { timeoutMs: 180_000 });

    const childReqs = model.requests.filter((r) => r.parentSessionId === parent.id);
    const childId = childReqs[0]?.sessionId as string;
    expect(childId).toMatch(/^ses_/);
    for (const r of childReqs) {
      expect(r.headers["x-router-parent"]).toBe(parent.id);
      expect(r.headers["x-router-agent"]).toBe("explore");
    }
    // Every read failed: none of them passed tool.execute.after.
    const child = toolParts(await oc.messages(childId));
    expect(child.map((p) => p.state.status)).toEqual(repeat(READS, "error"));

    await expect
      .poll(() => transitionsFor(childId).map((t) => t.verdict), { timeout: 15_000 })
      .toContain("looping");
    const ts = transitionsFor(childId);
    expect(ts.map((t) => `${t.previous}>${t.verdict}`)).toEqual(["ok>stalling", "stalling>looping"]);
    for (const t of ts) {
      expect(t.agent).toBe("explore");
      expect(t.parent_id).toBe(parent.id);
      expect(t.root_id).toBe(parent.id);
      expect(t.reason).toBe("read_only_failures");
      expect(t.signals.read_only).toBe(true);
    }
    // Counted once each: the failure streak is exactly the number of reads so far.
    const t = configSchema.parse({}).thresholds;
    expect(ts[0]?.signals.fail_streak).toBe(t.fail_warn);
    expect(ts[1]?.signals.fail_streak).toBe(t.fail_loop);
    expect(transitionsFor(parent.id)).toEqual([]);
  });

  test("a failing bash command retried is flagged from its real exit code", async () => {
    const s = await oc.createSession({ title: "fail" });
    // The output reads as success and changes every run (so the same-answer rule does not fire
    // first); only metadata.exit says it failed.
    const cmd = `echo all good $RANDOM ${MARK.arg}; exit 3`;
    await run(s.id, steps(...repeat(10, bash(cmd)), text("giving up")), "run it");
    const parts = toolParts(await oc.messages(s.id));
    expect(parts.map((p) => p.state.metadata?.exit)).toEqual(repeat(10, 3));
    await expect.poll(() => transitionsFor(s.id).length, { timeout: 15_000 }).toBeGreaterThan(0);
    const [t] = transitionsFor(s.id);
    expect(t?.verdict).toBe("stalling");
    expect(t?.reason).toBe("fail_streak");
    expect(t?.signals.fail_streak).toBe(configSchema.parse({}).thresholds.fail_warn);
    expect(t?.top_target).toBe("bash echo all");
  });

  test("a healthy edit-test-fix-commit session is never flagged", async () => {
    const s = await oc.createSession({ title: "healthy" });
    const p = (f: string) => join(oc.projectDir, f);
    const commit = `git add -A && git -c user.name=t -c user.email=t@example.invalid commit -q -m "${MARK.commit}"`;
    const script = steps(
      read(p("app.txt")),
      read(p("check.mjs")),
      bash("npm test"),
      {
        kind: "tools",
        calls: [
          {
            name: "edit",
            args: { filePath: p("app.txt"), oldString: "value=1", newString: `value=2 ${MARK.edit}` },
          },
        ],
      },
      bash("npm test"),
      {
        kind: "tools",
        calls: [{ name: "write", args: { filePath: p("notes.md"), content: `${MARK.write}\n` } }],
      },
      bash(commit),
      bash(`${MARK.env}_VAR=${MARK.env} printf '%s\\n' done PRIVOUT_$((40+2)) ${MARK.arg}`),
      read(p("README.md")),
      text("all done"),
    );
    await run(s.id, script, `fix the check ${MARK.prompt}`);

    const parts = toolParts(await oc.messages(s.id));
    expect(parts.map((x) => [x.tool, x.state.status])).toEqual([
      ["read", "completed"],
      ["read", "completed"],
      ["bash", "completed"],
      ["edit", "completed"],
      ["bash", "completed"],
      ["write", "completed"],
      ["bash", "completed"],
      ["bash", "completed"],
      ["read", "completed"],
    ]);
    expect(parts.filter((x) => x.tool === "bash").map((x) => x.state.metadata.exit)).toEqual([1, 0, 0, 0]);
    expect(parts[3].state.metadata.diff).toContain("value=2");
    expect(parts[7].state.output).toContain(MARK.output);
    expect(readFileSync(p("notes.md"), "utf8")).toContain(MARK.write);
    expect(execFileSync("git", ["log", "-1", "--format=%s"], { cwd: oc.projectDir }).toString()).toContain(
      MARK.commit,
    );
    // Give the queue time to deliver anything it had, then check nothing was flagged.
    await landedInHeartbeat(s.id);
    expect(transitionsFor(s.id)).toEqual([]);
    expect(toastsFor(s.id)).toEqual([]);
  });

  test("an orchestrator whose sub-agents land changes stays ok (roll-up); children carry X-Router-Parent", async () => {
    const parent = await oc.createSession({ title: "orchestrator" });
    const plan = join(oc.projectDir, "plan.md");
    const cycles = 7;
    router.on(parent.id, (req) => {
      if (req.parentSessionId) {
        const n = /write file (\d+)/.exec(req.lastUserText)?.[1] ?? "x";
        return req.step === 0
          ? {
              kind: "tools",
              calls: [
                { name: "write", args: { filePath: join(oc.projectDir, `out-${n}.txt`), content: `${n}\n` } },
              ],
            }
          : text("written");
      }
      if (req.step >= cycles) return text("all delegated");
      // Each step re-reads the plan (a repeat that would flag a lone worker) and delegates one write.
      const task = {
        description: `item ${req.step}`,
        prompt: `write file ${req.step}`,
        subagent_type: "general",
      };
      return {
        kind: "tools",
        calls: [
          { name: "read", args: { filePath: plan } },
          { name: "task", args: task },
        ],
      };
    });
    await oc.prompt(parent.id, "orchestrate", { timeoutMs: 180_000 });

    const childReqs = model.requests.filter((r) => r.parentSessionId === parent.id);
    const children = [...new Set(childReqs.map((r) => r.sessionId))];
    expect(children).toHaveLength(cycles);
    for (const r of childReqs) expect(r.headers["x-router-parent"]).toBe(parent.id);
    const parentReads = toolParts(await oc.messages(parent.id)).filter((x) => x.tool === "read");
    expect(parentReads).toHaveLength(cycles);
    await landedInHeartbeat(parent.id);
    expect(transitionsFor(parent.id)).toEqual([]);
    for (const c of children) expect(transitionsFor(c as string)).toEqual([]);
  });

  test("a hanging or down router does not slow the session or surface an error, and the queue delivers later", async () => {
    const cmd = "echo still fine; exit 4";
    // top_warn identical failing calls: warn mode's toast, router or not
    const script = () => steps(...repeat(T.top_warn, bash(cmd)), text("stopped"));
    const baseline = await oc.createSession({ title: "router ok" });
    const okMs = await run(baseline.id, script(), "go");

    receiver.setMode("hang");
    const hung = await oc.createSession({ title: "router hangs" });
    const hangMs = await run(hung.id, script(), "go");

    await receiver.down();
    const down = await oc.createSession({ title: "router down" });
    const downMs = await run(down.id, script(), "go");
    console.log(
      `[timing] ${T.top_warn}-call session: router ok ${okMs} ms, hanging ${hangMs} ms, down ${downMs} ms`,
    );

    for (const s of [hung, down]) {
      const msgs = await oc.messages(s.id);
      const last = msgs[msgs.length - 1];
      expect(last?.info.finish).toBe("stop");
      expect(msgs.some((m) => m.info.error)).toBe(false);
      expect(toolParts(msgs)).toHaveLength(T.top_warn);
      // Warn mode works without the router: the toast was still shown.
      expect(toastsFor(s.id).length).toBeGreaterThan(0);
    }
    expect(events.events.filter((e) => e.type === "session.error")).toEqual([]);
    // Loose bound only (the bench measures the cost): a stuck router adds no per-call wait.
    expect(hangMs).toBeLessThan(okMs * 3 + 5000);
    expect(downMs).toBeLessThan(okMs * 3 + 5000);

    await receiver.up();
    receiver.setMode("ok");
    await expect
      .poll(() => transitionsFor(hung.id).length + transitionsFor(down.id).length, { timeout: 30_000 })
      .toBeGreaterThanOrEqual(2);
  });

  test("every model request carried the identity headers; heartbeats are valid", () => {
    expect(model.requests.length).toBeGreaterThan(50);
    for (const r of model.requests) {
      expect(r.headers["x-router-conversation"]).toBe(r.sessionId);
      expect(r.headers["x-stallguard-plugin"]).toBe(VERSION);
      expect(r.headers["x-router-agent"]).toMatch(/^[a-z0-9_-]{1,64}$/);
      expect(r.headers["x-router-parent"]).toBe(r.parentSessionId);
    }
    expect(
      model.requests.filter((r) => r.isTitle).every((r) => r.headers["x-router-agent"] === "title"),
    ).toBe(true);
    const beats = receiver.messages.filter(
      (m): m is Extract<ProgressMessage, { type: "heartbeat" }> => m.type === "heartbeat",
    );
    expect(beats.length).toBeGreaterThan(2);
    expect(new Set(beats.map((b) => b.instance_id)).size).toBe(1);
    expect(beats.every((b) => b.plugin_version === VERSION)).toBe(true);
    expect(receiver.invalid).toEqual([]);
    expect(receiver.bodies.every((b) => b.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  test("nothing the plugin sent carries prompt text, file contents, edit strings, arguments, env or output", () => {
    const sent = [
      ...receiver.bodies.map((b) => b.raw),
      ...model.requests.flatMap((r) =>
        Object.entries(r.headers)
          .filter(([k]) => k.startsWith("x-router-") || k.startsWith("x-stallguard-"))
          .map(([k, v]) => `${k}: ${v}`),
      ),
      ...events.events.filter((e) => e.type === "tui.toast.show").map((e) => JSON.stringify(e.properties)),
    ].join("\n");
    expect(sent.length).toBeGreaterThan(1000);
    for (const m of Object.values(MARK)) expect(sent).not.toContain(m);
    // The markers did reach opencode, so their absence above means something.
    const seen = model.requests.map((r) => JSON.stringify(r.body)).join("\n");
    for (const m of Object.values(MARK)) expect(seen).toContain(m);
  });
});
