// The whole loop in real opencode: the stallguard plugin reports to a real
// router extension, and opencode's provider points at that extension's gate,
// which forwards to the scripted model. A looping session shows up in
// /api/sessions as looping (with gate-measured turns); an admin Stop makes the
// gate refuse opencode's next request with 429 (nothing reaches the model);
// Resume lets opencode's own retry through and the turn completes.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { type ModelReply, type ModelServer, scriptRouter, steps } from "../helpers/model-server.ts";
import type { OpencodeServer } from "../helpers/opencode.ts";
import { type PluginStack, startPluginStack } from "../helpers/plugin-stack.ts";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const VERSION = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")).version as string;
const ADMIN = "router-opencode-admin";
const TOKEN = "router-opencode-plugin";

const read = (filePath: string): ModelReply => ({
  kind: "tools",
  calls: [{ name: "read", args: { filePath } }],
});

describe("router extension with real opencode and the plugin", () => {
  const router = scriptRouter();
  let stack: PluginStack, model: ModelServer, srv: RunningServer, oc: OpencodeServer;
  const auth = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
  const row = async (id: string) =>
    (
      (await (await fetch(`${srv.url}/api/sessions`, { headers: auth })).json()) as {
        sessions: Array<Record<string, unknown>>;
      }
    ).sessions.find((s) => s.session_id === id);
  const refusals = async () =>
    Number(/^stallguard_refusals_total (\d+)$/m.exec(await (await fetch(`${srv.url}/metrics`)).text())?.[1]);

  beforeAll(async () => {
    stack = await startPluginStack({
      tmpPrefix: "sg-router-oc-",
      localYaml: // The spec's 429 (opencode retries it with back-off, so Resume lets the retry through);
        // the default is 403 (see README "Refusal shape").
        "watchdog:\n  enabled: false\nnotifications:\n  channels: []\nprogress:\n  refusal:\n    status: 429\n    retry_after_s: null\n",
      script: router.script,
      usage: { prompt_tokens: 2000, completion_tokens: 20 },
      adminToken: ADMIN,
      pluginToken: TOKEN,
    });
    ({ model, srv, oc } = stack);
  });

  afterAll(async () => {
    await stack?.close();
  });

  test("looping shows in /api/sessions; Stop refuses at the gate with 429; Resume lets it through", async () => {
    const s = await oc.createSession({ title: "reread" });
    router.on(
      s.id,
      steps(...Array.from({ length: 26 }, () => read(join(oc.projectDir, "README.md"))), {
        kind: "text",
        text: "done",
      }),
    );
    await oc.prompt(s.id, "read it", { timeoutMs: 180_000 });

    await expect.poll(async () => (await row(s.id))?.verdict, { timeout: 20_000 }).toBe("looping");
    const r = await row(s.id);
    expect(r).toMatchObject({
      root_id: s.id,
      parent_id: null,
      agent: "build",
      worst: "looping",
      flags: 1,
      stage: "warned",
      plugin_live: true,
      plugin_version: VERSION,
      source: "plugin",
      top_target: "read README.md",
      spend_source: "gate",
      refused: false,
    });
    expect(Number(r?.turns_since_landed)).toBeGreaterThanOrEqual(20);

    const stop = await fetch(`${srv.url}/api/trees/${s.id}/stop`, {
      method: "POST",
      headers: auth,
      body: JSON.stringify({ by: "e2e" }),
    });
    expect(stop.status).toBe(200);
    expect(await row(s.id)).toMatchObject({ refused: true, stopped_by: "e2e" });

    // opencode's next request is refused; nothing reaches the model while stopped.
    router.on(s.id, () => ({ kind: "text", text: "resumed" }));
    const before = model.requests.length;
    const refusedBefore = await refusals();
    await oc.promptAsync(s.id, "go on");
    await expect.poll(refusals, { timeout: 30_000 }).toBeGreaterThan(refusedBefore);
    expect(model.requests.length).toBe(before);
    const asked = (await (await fetch(`${srv.url}/gate/${s.id}`)).json()) as { refused: boolean };
    expect(asked.refused).toBe(true);
    const ro = new Database(srv.dbPath, { readonly: true });
    try {
      const statuses = ro.prepare(
        "SELECT DISTINCT status FROM requests WHERE refused = 1 AND session_id = ?",
      );
      expect(statuses.all(s.id)).toEqual([{ status: 429 }]);
    } finally {
      ro.close();
    }

    // Resume: opencode's own retry goes through and the turn completes.
    await fetch(`${srv.url}/api/trees/${s.id}/resume`, { method: "POST", headers: auth, body: "{}" });
    await oc.waitIdle(s.id, 120_000);
    expect(model.requests.length).toBeGreaterThan(before);
    const msgs = (await oc.messages(s.id)) as Array<{
      info: { role: string };
      parts: Array<{ type: string; text?: string }>;
    }>;
    const lastAssistant = msgs.filter((m) => m.info.role === "assistant").at(-1);
    expect(lastAssistant?.parts.some((p) => p.type === "text" && p.text === "resumed")).toBe(true);
  });
});
