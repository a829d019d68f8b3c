// Hooks never throw into opencode, whatever they are handed.
import { describe, expect, it } from "vitest";
import { createHooks } from "./hooks.ts";
import { loadSettings } from "./settings.ts";
import { Stallguard } from "./state.ts";

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
  const hooks = createHooks(sg);
  type AnyHook = (a: unknown, b: unknown) => Promise<unknown>;
  const names = ["chat.headers", "chat.message", "tool.execute.before", "tool.execute.after"] as const;

  it.each(names)("%s with malformed input", async (name) => {
    const fn = hooks[name] as unknown as AnyHook;
    for (const a of junk) for (const b of junk) await expect(fn(a, b)).resolves.toBeUndefined();
  });

  it("event with malformed events", async () => {
    const fn = hooks.event as unknown as (a: unknown) => Promise<unknown>;
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
