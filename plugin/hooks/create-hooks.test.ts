// Hooks never throw into opencode, whatever they are handed. Each hook runs
// inside a guard that turns a throw into a logged code, so "resolves" alone
// proves nothing: the junk cases also assert that no guard caught anything
// (the code itself tolerates junk), and one case makes the runtime throw to
// show the guard logs it with the hook's code.
import { describe, expect, it } from "vitest";
import { Stallguard } from "../runtime.ts";
import { loadSettings } from "../settings.ts";
import { createHooks } from "./create-hooks.ts";

/** Replaces sg.log with a recorder; returns the lines ("level code message"). */
function recordLogs(sg: Stallguard): string[] {
  const lines: string[] = [];
  sg.log = (level, code, message) => {
    lines.push(`${level} ${code} ${message}`);
  };
  return lines;
}

/** The lines a hook guard wrote (codes ending in _failed, from the hooks in this folder). */
const guardCodes = (lines: string[]) => lines.filter((l) => /^error \S+_failed /.test(l));

const junk: unknown[] = [undefined, null, 0, "x", [], {}, { sessionID: 5 }, { type: "tool", state: null }];

describe("hooks never throw", () => {
  const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
  const sg = new Stallguard({
    settings,
    client: {
      session: {
        get: () => {
          throw new Error("sync boom");
        },
      },
      tui: { showToast: () => Promise.reject(new Error("no tui")) },
      app: {
        log: () => {
          throw new Error("no log either");
        },
      },
    },
  });
  const logged = recordLogs(sg);
  const hooks = createHooks(sg);
  type AnyHook = (a: unknown, b: unknown) => Promise<unknown>;
  const names = ["chat.headers", "chat.message", "tool.execute.before", "tool.execute.after"] as const;

  it.each(names)("%s with malformed input", async (name) => {
    const fn = hooks[name] as unknown as AnyHook;
    logged.length = 0;
    for (const a of junk) for (const b of junk) await expect(fn(a, b)).resolves.toBeUndefined();
    expect(guardCodes(logged)).toEqual([]);
  });

  it("event with malformed events", async () => {
    const fn = hooks.event as unknown as (a: unknown) => Promise<unknown>;
    logged.length = 0;
    for (const e of junk) await expect(fn({ event: e })).resolves.toBeUndefined();
    for (const type of [
      "message.part.updated",
      "message.updated",
      "session.created",
      "session.deleted",
      "session.compacted",
    ])
      for (const properties of junk)
        await expect(fn({ event: { type, properties } })).resolves.toBeUndefined();
    expect(guardCodes(logged)).toEqual([]);
  });

  it("a runtime that throws is caught by the guard and logged with the hook's code", async () => {
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    const broken = new Stallguard({ settings });
    const seen = recordLogs(broken);
    const boom = () => {
      throw new Error("runtime boom");
    };
    broken.toolFinished = boom;
    broken.toolStarting = () => Promise.reject(new Error("async boom"));
    const h = createHooks(broken);
    const after = h["tool.execute.after"] as unknown as AnyHook;
    const before = h["tool.execute.before"] as unknown as AnyHook;
    const call = { tool: "read", sessionID: "ses_b", callID: "call_b" };
    await expect(after(call, { output: "", metadata: {} })).resolves.toBeUndefined();
    await expect(before(call, { args: {} })).resolves.toBeUndefined();
    expect(seen).toEqual([
      "error tool_after_failed Error: runtime boom",
      "error tool_before_failed Error: async boom",
    ]);
    await broken.dispose();
  });

  it("a failing parent lookup still yields headers", async () => {
    const out = { headers: {} as Record<string, string> };
    await hooks["chat.headers"]?.({ sessionID: "ses_q", agent: "build" } as never, out);
    expect(out.headers["X-Router-Conversation"]).toBe("ses_q");
  });

  it("dispose resolves with the router unreachable", async () => {
    await expect(hooks.dispose?.()).resolves.toBeUndefined();
  });
});

describe("mode hooks", () => {
  it("compacting, autocontinue and session.compacted never throw, whatever they are handed", async () => {
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    const sg = new Stallguard({ settings });
    const logged = recordLogs(sg);
    const hooks = createHooks(sg, { client: null });
    type AnyHook = (a: unknown, b: unknown) => Promise<unknown>;
    for (const name of ["experimental.session.compacting", "experimental.compaction.autocontinue"] as const) {
      const fn = hooks[name] as unknown as AnyHook;
      for (const a of junk) for (const b of junk) await expect(fn(a, b)).resolves.toBeUndefined();
    }
    const ev = hooks.event as unknown as (a: unknown) => Promise<unknown>;
    for (const p of junk)
      await expect(ev({ event: { type: "session.compacted", properties: p } })).resolves.toBeUndefined();
    expect(guardCodes(logged)).toEqual([]);
    await sg.dispose();
  });

  it("a directive from a /progress answer puts its report into that session's compaction", async () => {
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    const sg = new Stallguard({ settings, fetch: async () => new Response("{}", { status: 200 }) });
    const calls: string[] = [];
    const hooks = createHooks(sg, {
      client: {
        session: {
          abort: async (o: { path: { id: string } }) => {
            calls.push(`abort ${o.path.id}`);
            return { data: true };
          },
          summarize: async (o: { path: { id: string } }) => {
            calls.push(`summarize ${o.path.id}`);
            return new Promise(() => {});
          },
        },
      },
    });
    const headers = hooks["chat.headers"] as unknown as (a: unknown, b: unknown) => Promise<void>;
    await headers(
      { sessionID: "ses_r", agent: "build", model: { id: "loop", providerID: "fake" } },
      { headers: {} },
    );
    sg.reporter.onAnswer?.({
      accepted: 1,
      duplicates: 0,
      directives: [
        { id: "d:hook1", action: "compact", session_id: "ses_r", root_id: "ses_r", report: "REPORT-LINE" },
      ],
    });
    // The runner looks the model up before it summarizes: wait for the call, not for a time.
    await expect.poll(() => calls).toEqual(["summarize ses_r"]);
    const out = { context: [] as string[] };
    await (hooks["experimental.session.compacting"] as unknown as (a: unknown, b: unknown) => Promise<void>)(
      { sessionID: "ses_r" },
      out,
    );
    expect(out.context.join("\n")).toContain("REPORT-LINE");
    await sg.dispose();
  });

  it("a toast in a /progress answer (a mode's hard stop) is shown in opencode, unless toasts are off", () => {
    const shown: unknown[] = [];
    const client = { tui: { showToast: async (o: { body: unknown }) => shown.push(o.body) } };
    const toast = {
      session_id: "ses_t",
      title: "stallguard: tree stopped",
      message: "stopped",
      variant: "error" as const,
    };
    for (const toasts of [true, false]) {
      const { settings } = loadSettings({
        env: { STALLGUARD_URL: "http://127.0.0.1:9" },
        options: { plugin: { toasts } },
      });
      const sg = new Stallguard({ settings, client });
      createHooks(sg);
      sg.reporter.onAnswer?.({ accepted: 1, duplicates: 0, directives: [], toasts: [toast] });
      sg.reporter.close();
    }
    expect(shown).toEqual([{ title: toast.title, message: "stopped", variant: "error", duration: 15_000 }]);
  });
});
