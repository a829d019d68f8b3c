// The slow loop shapes of issue 20 caught soon, end to end: the real plugin in
// real opencode, through the real gate and router (real SQLite), with the
// shipped thresholds. Two searches alternating with the same answers are
// flagged in a row on the alternation's row_warn-th repeat; a sweep of ten
// views of one file re-read in the same order is flagged retrace_warn views
// into its second pass. The router keeps each flag with its reason and the
// evidence the admin page shows; a single pass of the same views is not flagged.
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { type ModelReply, scriptRouter, steps } from "../helpers/model-server.ts";
import { type PluginStack, pluginStackPerFile } from "../helpers/plugin-stack.ts";

const ADMIN = "loop-shapes-e2e-admin-token";
const TOKEN = "loop-shapes-e2e-plugin-token";
const T = configSchema.parse({}).thresholds;
const VIEWS = 10;

// biome-ignore lint/suspicious/noExplicitAny: raw API JSON
type Json = any;

const tool = (name: string, args: Record<string, unknown>): ModelReply => ({
  kind: "tools",
  calls: [{ name, args }],
});
const text = (t: string): ModelReply => ({ kind: "text", text: t });

describe("loops flagged soon in real opencode (plugin, gate, router)", () => {
  const router = scriptRouter();
  let stack: PluginStack;

  const detail = async (id: string): Promise<Json> => {
    const res = await fetch(`${stack.srv.url}/api/sessions/${id}`, {
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    return res.status === 200 ? res.json() : null;
  };
  /** The session's first flag as the router stored it, once the plugin's report arrived. */
  async function firstFlag(id: string): Promise<Json> {
    await expect
      .poll(async () => (await detail(id))?.transitions?.length ?? 0, { timeout: 20_000 })
      .toBeGreaterThan(0);
    return (await detail(id)).transitions[0];
  }

  pluginStackPerFile(
    {
      tmpPrefix: "sg-loop-shapes-",
      script: router.script,
      adminToken: ADMIN,
      pluginToken: TOKEN,
      projectFiles: {
        "README.md": "# scratch\n",
        "plan.md": "- [ ] find the dropped requests\n",
        "service.txt": Array.from({ length: 20 * VIEWS }, (_, i) => `handler ${i + 1}: route ${i * 7}`).join(
          "\n",
        ),
      },
    },
    (s) => {
      stack = s;
    },
  );

  test("two searches alternating with the same answers: flagged in a row on the seventh call", async () => {
    const { oc } = stack;
    const s = await oc.createSession({ title: "alternation" });
    const search = [
      tool("bash", { command: "grep -n route missing.txt", description: "Search" }),
      tool("bash", { command: "grep -c route service.txt", description: "Count" }),
    ];
    const pairs = Array.from({ length: 6 }, () => search).flat();
    router.on(
      s.id,
      steps(tool("read", { filePath: join(oc.projectDir, "plan.md") }), ...pairs, text("stuck")),
    );
    await oc.prompt(s.id, "why are requests dropped?", { timeoutMs: 180_000 });

    const t = await firstFlag(s.id);
    expect(t).toMatchObject({ verdict: "stalling", reason: "in_a_row", source: "plugin" });
    // one read, the two searches, then row_warn repeats of them in turn
    expect(t.signals.calls).toBe(1 + 2 + T.row_warn);
    // the latest call at the flag (the seventh of the alternation) is the first search again
    expect(t.evidence.in_a_row).toEqual({ target: "bash grep -n", period: 2, repeats: T.row_warn });
  });

  test("a sweep of ten views re-read in the same order: flagged retrace_warn views into the second pass", async () => {
    const { oc } = stack;
    const view = (i: number) =>
      tool("read", { filePath: join(oc.projectDir, "service.txt"), offset: i * 20 + 1, limit: 20 });
    const sweep = Array.from({ length: VIEWS }, (_, i) => view(i));
    const start = [
      tool("read", { filePath: join(oc.projectDir, "README.md") }),
      tool("read", { filePath: join(oc.projectDir, "plan.md") }),
    ];

    // One pass is reading, not looping.
    const once = await oc.createSession({ title: "one pass" });
    router.on(once.id, steps(...start, ...sweep, text("read it all")));
    await oc.prompt(once.id, "read the service", { timeoutMs: 180_000 });

    const s = await oc.createSession({ title: "sweep" });
    router.on(s.id, steps(...start, ...sweep, ...sweep.slice(0, 6), text("stuck")));
    await oc.prompt(s.id, "why are requests dropped?", { timeoutMs: 180_000 });
    const t = await firstFlag(s.id);
    expect(t).toMatchObject({ verdict: "stalling", reason: "retrace", source: "plugin" });
    expect(t.signals.calls).toBe(start.length + VIEWS + T.retrace_warn);
    expect(t.evidence.retrace).toEqual({
      target: "read service.txt",
      period: VIEWS,
      calls: T.retrace_warn,
      distinct: T.retrace_warn,
    });
    // the session's report ends with the retrace's advice; the thresholds are the shipped ones
    const d = await detail(s.id);
    expect(d.session.report).toContain("Avoid: redoing a sweep already done");
    expect(d.thresholds).toMatchObject({ retrace_warn: T.retrace_warn, row_warn: T.row_warn });
    // by now the plugin has reported everything before the sweep session's flag
    expect((await detail(once.id))?.transitions ?? []).toEqual([]);
  });
});
