// The Stallguard object fed the exact hook and event shapes opencode 1.18.33
// produces (see opencode-reference.md), with a real receiver behind the queue.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Transition } from "../shared/index.ts";
import { hooksOf } from "./_test-hooks.ts";
import { type Receiver, startReceiver } from "./_test-receiver.ts";
import { type ClientLike, Stallguard } from "./runtime.ts";
import { loadSettings } from "./settings.ts";
import type { Toast } from "./toast.ts";

let rx: Receiver;
let sg: Stallguard | undefined;
let dir: string;
let clock = 1_000_000;
const toasts: Toast[] = [];

beforeEach(async () => {
  rx = await startReceiver();
  dir = mkdtempSync(join(tmpdir(), "sg-state-"));
  toasts.length = 0;
});
afterEach(async () => {
  await sg?.dispose();
  sg = undefined;
  await rx.close();
  rmSync(dir, { recursive: true, force: true });
});

function make(opts: { client?: ClientLike; env?: Record<string, string> } = {}): Stallguard {
  const { settings } = loadSettings({ env: { STALLGUARD_URL: rx.url, ...opts.env } });
  sg = new Stallguard({
    settings,
    directory: dir,
    now: () => clock,
    instanceId: "sg_test_1",
    version: "9.9.9",
    retryMs: 20,
    client: opts.client ?? {
      tui: {
        showToast: async ({ body }) => {
          toasts.push(body);
          return true;
        },
      },
    },
  });
  return sg;
}

let seq = 0;
async function step(s: Stallguard, sessionId: string, agent: string): Promise<Record<string, string>> {
  clock += 1000;
  const out = { headers: {} as Record<string, string> };
  await hooksOf(s).headers(
    { sessionID: sessionId, agent, model: { id: "loop" }, provider: {}, message: {} },
    out,
  );
  return out.headers;
}
function hookCall(s: Stallguard, sessionId: string, tool: string, args: unknown, metadata: unknown) {
  const callID = `call_${++seq}`;
  hooksOf(s).toolAfter({ tool, sessionID: sessionId, callID, args }, { title: "", output: "", metadata });
  // opencode then publishes the completed part: it must not be counted again.
  hooksOf(s).event({
    type: "message.part.updated",
    properties: {
      part: {
        id: `prt_${seq}`,
        type: "tool",
        tool,
        callID,
        sessionID: sessionId,
        state: { status: "completed", input: args, metadata, time: { start: clock, end: clock } },
      },
    },
  });
}
function failedPart(s: Stallguard, sessionId: string, tool: string, args: unknown) {
  const callID = `call_${++seq}`;
  const part = {
    id: `prt_${seq}`,
    type: "tool",
    tool,
    callID,
    sessionID: sessionId,
    state: { status: "error", input: args, error: "File not found", time: { start: clock, end: clock } },
  };
  hooksOf(s).event({
    type: "message.part.updated",
    properties: { part: { ...part, state: { status: "running", input: args } } },
  });
  hooksOf(s).event({ type: "message.part.updated", properties: { part } });
  hooksOf(s).event({ type: "message.part.updated", properties: { part } });
}
const transitions = (id: string) =>
  rx.messages.filter((m): m is Transition => m.type === "transition" && m.session_id === id);

describe("Stallguard when its reports do not reach the router", () => {
  it("says so once (toast and log naming the URL), keeps the reports, and again only after a delivery", async () => {
    const logs: Array<{ level: string; message: string }> = [];
    const s = make({
      client: {
        tui: { showToast: async ({ body }) => toasts.push(body) },
        app: { log: async ({ body }) => logs.push(body) },
      },
    });
    const undelivered = () => logs.filter((l) => l.message.startsWith("progress_undelivered"));
    s.heartbeat();
    await expect.poll(() => s.reporter.stats.sent).toBe(1);
    expect((await step(s, "ses_a", "build"))["X-Stallguard-Report-State"]).toBe("ok");
    await rx.down();
    s.heartbeat();
    await expect.poll(() => s.reporter.stats.failures).toBeGreaterThan(1);
    // Under the grace (5 s on the plugin's clock): a router restart says nothing.
    expect(toasts).toEqual([]);
    expect((await step(s, "ses_a", "build"))["X-Stallguard-Report-State"]).toBe("failing");
    clock += 6000;
    const failures = s.reporter.stats.failures;
    await expect.poll(() => s.reporter.stats.failures).toBeGreaterThan(failures + 2);
    expect(toasts).toHaveLength(1);
    expect(toasts[0]).toMatchObject({
      title: "stallguard: reports do not reach the router",
      variant: "warning",
    });
    expect(toasts[0]?.message).toContain(`${rx.url}/progress: no answer: ECONNREFUSED`);
    expect(undelivered()).toHaveLength(1);
    expect(undelivered()[0]?.message).toContain(`cannot deliver reports to ${rx.url}/progress since`);
    expect(undelivered()[0]?.message).toContain("the URL is from STALLGUARD_URL");
    expect(s.reporter.pending).toBeGreaterThan(0);

    await rx.up();
    await expect.poll(() => s.reporter.pending).toBe(0);
    expect(logs.some((l) => l.message === `progress_delivered: reports reach ${rx.url}/progress again`)).toBe(
      true,
    );
    await rx.down();
    s.heartbeat();
    await expect.poll(() => s.reporter.stats.failures).toBeGreaterThan(failures + 4);
    clock += 6000;
    await expect.poll(() => toasts.length).toBe(2);
    expect(undelivered()).toHaveLength(2);
  });
});

describe("Stallguard", () => {
  it("sets the identity headers, with the parent from session.created", async () => {
    const s = make();
    hooksOf(s).event({
      type: "session.created",
      properties: { info: { id: "ses_child", parentID: "ses_root" } },
    });
    expect(await step(s, "ses_child", "Explore")).toEqual({
      "X-Router-Conversation": "ses_child",
      "X-Router-Agent": "explore",
      "X-Router-Parent": "ses_root",
      "X-Stallguard-Plugin": "9.9.9",
      // Where it reports and how that goes, for the gate (headers seen vs reporting).
      "X-Stallguard-Instance": "sg_test_1",
      "X-Stallguard-Report-To": rx.url,
      "X-Stallguard-Report-State": "pending",
    });
    expect(await step(s, "ses_root", "build")).not.toHaveProperty("X-Router-Parent");
  });

  it("falls back to client.session.get for a parent it never saw", async () => {
    let calls = 0;
    const s = make({
      client: {
        session: {
          get: async ({ path }) => {
            calls++;
            return { data: { id: path.id, parentID: "ses_p" } };
          },
        },
      },
    });
    expect((await step(s, "ses_late", "general"))["X-Router-Parent"]).toBe("ses_p");
    expect((await step(s, "ses_late", "general"))["X-Router-Parent"]).toBe("ses_p");
    expect(calls).toBe(1);
  });

  it("counts a call seen by both the hook and its part once; errors only from parts", async () => {
    const s = make();
    await step(s, "ses_a", "build");
    hookCall(s, "ses_a", "read", { filePath: join(dir, "a.ts") }, { preview: "" });
    failedPart(s, "ses_a", "read", { filePath: join(dir, "gone.ts") });
    const sig = s.forest.get("ses_a")?.signals();
    expect(sig?.calls).toBe(2);
    expect(sig?.failures).toBe(1);
    expect(s.stats().calls).toBe(2);
  });

  it("a worker re-reading one file: ok -> stalling -> looping, valid bodies, toasts", async () => {
    const s = make();
    for (let i = 0; i < 26; i++) {
      await step(s, "ses_w", "build");
      hookCall(s, "ses_w", "read", { filePath: join(dir, "navbar.js") }, { preview: "secret content" });
    }
    await expect.poll(() => transitions("ses_w").map((t) => t.verdict)).toEqual(["stalling", "looping"]);
    expect(rx.invalid).toEqual([]);
    expect(transitions("ses_w")[0]?.top_target).toBe("read navbar.js");
    expect(toasts.map((t) => t.variant)).toEqual(["warning", "error"]);
    expect(toasts[0]?.message).toContain("ses_w");
    expect(rx.bodies.map((b) => b.raw).join("")).not.toContain("secret content");
  });

  it("a write that changes the file lands; rewriting the same content does not", async () => {
    const s = make();
    const file = join(dir, "out.txt");
    writeFileSync(file, "same\n");
    const write = async (content: string) => {
      const callID = `call_${++seq}`;
      const args = { filePath: file, content };
      await hooksOf(s).toolBefore({ tool: "write", sessionID: "ses_wr", callID }, { args });
      writeFileSync(file, content);
      hooksOf(s).toolAfter(
        { tool: "write", sessionID: "ses_wr", callID, args },
        { metadata: { exists: true } },
      );
    };
    await step(s, "ses_wr", "build");
    await write("same\n");
    expect(s.forest.get("ses_wr")?.signals().landed).toBe(0);
    await write("changed\n");
    expect(s.forest.get("ses_wr")?.signals().landed).toBe(1);
  });

  it("a test that passes after failing lands; bash exit comes from metadata.exit", async () => {
    const s = make();
    await step(s, "ses_t", "build");
    hookCall(s, "ses_t", "bash", { command: "npm test" }, { exit: 1, output: "" });
    hookCall(s, "ses_t", "bash", { command: "npm test" }, { exit: 0, output: "FAILED (looks bad, is not)" });
    const sig = s.forest.get("ses_t")?.signals();
    expect(sig?.failures).toBe(1);
    expect(sig?.landed).toBe(1);
  });

  it("roll-up: a child's landed writes keep its parent ok; without the parent link it would be flagged", async () => {
    const run = async (linkParent: boolean) => {
      const s = make();
      for (let i = 0; i < 8; i++) {
        await step(s, "ses_orch", "atlas");
        hookCall(s, "ses_orch", "read", { filePath: join(dir, "plan.md") }, {});
        const child = `ses_kid${i}`;
        if (linkParent)
          hooksOf(s).event({
            type: "session.created",
            properties: { info: { id: child, parentID: "ses_orch" } },
          });
        await step(s, child, "general");
        const callID = `call_${++seq}`;
        const args = { filePath: join(dir, `kid${i}.txt`), content: `${i}` };
        await hooksOf(s).toolBefore({ tool: "write", sessionID: child, callID }, { args });
        hooksOf(s).toolAfter(
          { tool: "write", sessionID: child, callID, args },
          { metadata: { exists: false } },
        );
      }
      const verdict = s.forest.get("ses_orch")?.lastVerdict.verdict;
      await s.dispose();
      sg = undefined;
      return verdict;
    };
    expect(await run(true)).toBe("ok");
    expect(await run(false)).toBe("stalling");
  });

  it("counts turns per agent step, not for title calls; injected turns are a signal", async () => {
    const s = make();
    await step(s, "ses_i", "title");
    await step(s, "ses_i", "build");
    hooksOf(s).chatMessage(
      { sessionID: "ses_i" },
      { message: { id: "msg_u1" }, parts: [{ type: "text", text: "go" }] },
    );
    hooksOf(s).chatMessage(
      { sessionID: "ses_i" },
      {
        message: { id: "msg_u2" },
        parts: [{ type: "text", text: "[SYSTEM DIRECTIVE: OH-MY-OPENCODE - X]" }],
      },
    );
    // opencode's own resume turn after a compaction (only a synthetic part live) is no nudge and no
    // person (the stored adapter agrees), whether or not chat.message saw its message.
    for (const messageID of ["msg_c", "msg_u2"])
      hooksOf(s).event({
        type: "message.part.updated",
        properties: {
          part: {
            type: "text",
            synthetic: true,
            metadata: { compaction_continue: true },
            sessionID: "ses_i",
            messageID,
          },
        },
      });
    const sig = s.forest.get("ses_i")?.signals();
    expect(sig?.turns).toBe(1);
    expect(sig?.injectedTotal).toBe(1);
  });

  it("spend from message.updated feeds $ since landed", async () => {
    const s = make();
    await step(s, "ses_u", "build");
    const info = {
      id: "msg_a",
      sessionID: "ses_u",
      role: "assistant",
      cost: 0.25,
      tokens: { input: 10 },
      time: { completed: clock },
    };
    hooksOf(s).event({ type: "message.updated", properties: { info } });
    hooksOf(s).event({ type: "message.updated", properties: { info } });
    expect(s.forest.get("ses_u")?.signals().usdSinceLanded).toBeCloseTo(0.25);
  });

  it("heartbeat: instance id, version and live sessions; idle sessions are evicted", async () => {
    const s = make();
    await step(s, "ses_h", "build");
    s.heartbeat();
    await expect.poll(() => rx.messages.filter((m) => m.type === "heartbeat").length).toBe(1);
    const hb = rx.messages.find((m) => m.type === "heartbeat");
    expect(hb).toMatchObject({ instance_id: "sg_test_1", plugin_version: "9.9.9" });
    expect(hb?.type === "heartbeat" && hb.sessions.map((x) => x.session_id)).toEqual(["ses_h"]);
    clock += 3 * 3600_000;
    s.heartbeat();
    expect(s.stats().sessions).toBe(0);
  });

  it("heartbeat: the session's current figures and what opencode shows of it (title, folder, start)", async () => {
    const s = make({ env: {} });
    hooksOf(s).event({
      type: "session.created",
      properties: {
        info: {
          id: "ses_f",
          directory: `${dir}/proj`,
          title: "fix\u0007 the\n\u202eparser",
          time: { created: 1_796_226_296_158, updated: 1_796_226_296_158 },
        },
      },
    });
    // session.updated without a title keeps the one known.
    hooksOf(s).event({ type: "session.updated", properties: { info: { id: "ses_f", agent: "build" } } });
    await step(s, "ses_f", "build");
    hookCall(s, "ses_f", "edit", { filePath: `${dir}/a.js` }, { diff: "--- a\n+++ b\n@@\n-x\n+y\n" });
    for (let i = 0; i < 30; i++) {
      await step(s, "ses_f", "build");
      hookCall(s, "ses_f", "read", { filePath: `${dir}/b.js` }, {});
    }
    s.heartbeat();
    await expect.poll(() => rx.messages.filter((m) => m.type === "heartbeat").length).toBe(1);
    const hb = rx.messages.find((m) => m.type === "heartbeat");
    const one = hb?.type === "heartbeat" ? hb.sessions.find((x) => x.session_id === "ses_f") : undefined;
    expect(one).toMatchObject({
      calls: 31,
      landed: 1,
      top_target: "read b.js",
      top_target_count: 30,
      title: "fix the parser",
      directory: `${dir}/proj`,
      created_at: 1_796_226_296_158,
    });
    expect(one?.last_landed_at).toBeGreaterThan(0);
    expect(rx.invalid).toEqual([]);
  });

  it("memory stays bounded by plugin.max_sessions", async () => {
    const { settings } = loadSettings({
      env: { STALLGUARD_URL: rx.url },
      options: { plugin: { max_sessions: 20 } },
    });
    sg = new Stallguard({ settings, directory: dir, now: () => clock });
    for (let i = 0; i < 500; i++) {
      hooksOf(sg).event({
        type: "session.created",
        properties: { info: { id: `ses_${i}`, parentID: "ses_root" } },
      });
      await step(sg, `ses_${i}`, "build");
      hookCall(sg, `ses_${i}`, "read", { filePath: "/x" }, {});
    }
    expect(sg.stats().sessions).toBeLessThanOrEqual(20);
    expect(sg.stats().identities).toBeLessThanOrEqual(80);
  });
});
