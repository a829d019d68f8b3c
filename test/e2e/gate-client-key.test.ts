// The gate's client key the documented way, in the real opencode binary: the
// router (`startServer`, its client.key created under opencode's own HOME)
// in front of the scripted model, and opencode's provider reading the key
// with {file:~/.config/stallguard/client.key} or {env:STALLGUARD_CLIENT_KEY}
// as README "Run it for real" says. Without a key opencode shows the gate's
// 401, which names what to set. The plugin runs without STALLGUARD_TOKEN and
// reports with the plugin.token file serve wrote (no copy-paste step). One
// opencode serve for the file.
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { freePort } from "../helpers/free-port.ts";
import { type ModelServer, scriptRouter, startModelServer, steps } from "../helpers/model-server.ts";
import { MODEL_ID, type OpencodeServer, REPO, startOpencode } from "../helpers/opencode.ts";

const FILE_KEY = "{file:~/.config/stallguard/client.key}";
const ENV_KEY = "{env:STALLGUARD_CLIENT_KEY}";

function provider(baseURL: string, apiKey: string | null) {
  return {
    npm: "@ai-sdk/openai-compatible",
    name: "stallguard gate",
    options: { baseURL, ...(apiKey === null ? {} : { apiKey }) },
    models: { [MODEL_ID]: { name: MODEL_ID, limit: { context: 200000, output: 4096 } } },
  };
}

describe("the gate's client key in real opencode", () => {
  const router = scriptRouter();
  const dir = mkdtempSync(join(tmpdir(), "sg-client-key-"));
  let model: ModelServer;
  let srv: RunningServer | undefined;
  let oc: OpencodeServer;

  beforeAll(async () => {
    model = await startModelServer({ script: router.script });
    const port = await freePort();
    const gate = `http://127.0.0.1:${port}/v1`;
    oc = await startOpencode({
      modelUrl: gate,
      apiKey: FILE_KEY,
      opencodeConfig: {
        provider: {
          viaenv: provider(gate, ENV_KEY),
          nokey: provider(gate, null),
          wrongkey: provider(gate, "sk-guess"),
        },
      },
      projectFiles: { "README.md": "# scratch\n" },
      plugins: [join(REPO, "dist", "plugin", "stallguard.js")],
      env: { STALLGUARD_URL: `http://127.0.0.1:${port}`, STALLGUARD_HEARTBEAT_MS: "500" },
      // The router starts first, with opencode's HOME: serve creates ~/.config/stallguard/client.key
      // there, before opencode reads opencode.json.
      beforeStart: async (ws) => {
        srv = await startServer({
          port,
          dbPath: join(dir, "stallguard.db"),
          root: null,
          upstream: model.url,
          env: { PATH: process.env.PATH, HOME: ws.home, XDG_CONFIG_HOME: join(ws.home, ".config") },
          log: () => {},
        });
        ws.env.STALLGUARD_CLIENT_KEY = srv.clientKeys[0]?.key ?? "";
      },
    });
  });

  afterAll(async () => {
    await oc?.stop();
    await srv?.close();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const clients = (session: string) => {
    const db = new Database(join(dir, "stallguard.db"), { readonly: true });
    try {
      return (
        db.prepare("SELECT client FROM requests WHERE session_id = ?").all(session) as Array<{
          client: string;
        }>
      ).map((r) => r.client);
    } finally {
      db.close();
    }
  };

  test("serve wrote client.key 0600; {file:...} and {env:...} both reach the model through the gate", async () => {
    expect(statSync(join(oc.home, ".config", "stallguard", "client.key")).mode & 0o777).toBe(0o600);
    for (const providerID of ["fake", "viaenv"]) {
      const s = await oc.createSession({ title: providerID });
      router.on(s.id, steps({ kind: "text", text: `through the gate via ${providerID}` }));
      await oc.api("POST", `/session/${s.id}/prompt_async`, {
        parts: [{ type: "text", text: "hi" }],
        model: { providerID, modelID: MODEL_ID },
      });
      await oc.waitIdle(s.id, 60_000);
      const last = (await oc.messages(s.id)).at(-1);
      expect(last?.info.error, providerID).toBeUndefined();
      expect(
        last?.parts.some((p) => p.type === "text" && p.text === `through the gate via ${providerID}`),
      ).toBe(true);
      const seen = model.requests.filter((r) => r.sessionId === s.id);
      expect(seen).toHaveLength(1);
      // The client key stays at the gate: no upstream key is configured, so none goes up.
      expect(seen[0]?.headers.authorization).toBeUndefined();
      expect(clients(s.id)).toEqual(["default"]);
    }
  });

  test("the plugin reports with the plugin.token file serve wrote: no STALLGUARD_TOKEN anywhere", async () => {
    expect(oc.env.STALLGUARD_TOKEN).toBeUndefined();
    expect(statSync(join(oc.home, ".config", "stallguard", "plugin.token")).mode & 0o777).toBe(0o600);
    const live = async () => {
      const text = await (await fetch(`${srv?.url}/metrics`)).text();
      return Number(/^stallguard_live_plugins (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    await expect.poll(live, { timeout: 30_000, interval: 250 }).toBeGreaterThanOrEqual(1);
  });

  test("without the key, or with a wrong one, opencode shows the gate's 401 naming what to set", async () => {
    for (const providerID of ["nokey", "wrongkey"]) {
      const s = await oc.createSession({ title: providerID });
      const ev = oc.events();
      await ev.ready;
      const error = ev.waitFor((e) => e.type === "session.error" && e.properties?.sessionID === s.id, 60_000);
      await oc.api("POST", `/session/${s.id}/prompt_async`, {
        parts: [{ type: "text", text: "hi" }],
        model: { providerID, modelID: MODEL_ID },
      });
      const e = await error;
      await oc.waitIdle(s.id, 30_000);
      ev.stop();
      const shown =
        ((await oc.messages(s.id)).at(-1)?.info.error?.data?.message as string | undefined) ??
        (e.properties?.error?.data?.message as string | undefined) ??
        "";
      console.log(`[client-key] ${providerID}: opencode shows: ${shown}`);
      expect(shown).toContain("401");
      expect(shown).toContain('"apiKey" in opencode.json');
      expect(shown).toContain(FILE_KEY);
      expect(model.requests.filter((r) => r.sessionId === s.id)).toHaveLength(0);
      expect(clients(s.id)).toEqual([]);
    }
  });
});
