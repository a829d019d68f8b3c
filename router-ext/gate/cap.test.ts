// The modes' context cap at the gate, with the real SQLite store behind it: an
// over-cap request of a capped tree is answered locally with 413 and OpenAI's
// context_length_exceeded code (the shape opencode compacts on); the
// compaction agent's own request passes and resets the measurement.

import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { transition } from "../../test/helpers/wire-fixtures.ts";
import { planKnobs, planTransition } from "../modes/plan.ts";
import { openSqliteStore, type SqliteStore } from "../store/sqlite-store.ts";
import { contextCapBody } from "./index.ts";
import { keyedFetch as fetch, type ServedGate, serveGate, TEST_CLIENT } from "./testing.ts";

describe("gate context cap (real store, real upstream)", () => {
  let dir: string;
  let store: SqliteStore;
  let gate: ServedGate;
  let upstreamUrl = "";
  let prompt = 5000;
  let upstreamHits = 0;
  /** Caps the tree the way a mode does: a stored transition whose plan sets the cap. */
  const capTree = async (rootId: string, cap: number) => {
    const knobs = planKnobs(configSchema.parse({}));
    await store.storeProgress([transition(rootId, null, "build", "ok", "stalling", 1)], {
      now: 1,
      plan: (ctx, t) => {
        const p = planTransition(ctx, t, knobs, 1);
        return { ...p, effects: { ...p.effects, caps: [{ rootId, cap }] } };
      },
    });
  };
  const server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      upstreamHits++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          object: "chat.completion",
          model: "m",
          choices: [{ index: 0, message: { role: "assistant", content: "ok" }, finish_reason: "stop" }],
          usage: { prompt_tokens: prompt, completion_tokens: 1, total_tokens: prompt + 1 },
        }),
      );
    });
  });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-cap-"));
    store = await openSqliteStore(join(dir, "s.db"));
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
    upstreamUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
    gate = await serveGate({
      clientKeys: [TEST_CLIENT],
      upstream: upstreamUrl,
      apiKey: null,
      prices: {},
      refusal: { status: 403, retry_after_s: 0 },
      maxBodyBytes: 1_000_000,
      timeoutMs: 5000,
      store,
    });
  });
  afterAll(async () => {
    await gate?.close();
    await new Promise<void>((r) => server.close(() => r()));
    await store?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  // The gate takes a request's record (and the measured context the cap reads)
  // before the body's end reaches the client, so reading the whole answer is the
  // wait (no sleeping); the rows reach the file in the store's next batch (flush).
  const chat = async (agent: string) => {
    const res = await fetch(`${gate.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-router-conversation": "ses_c",
        "x-router-agent": agent,
      },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }),
    });
    return {
      status: res.status,
      body: (await res.json()) as { error?: { code: string; message: string; type: string } },
    };
  };

  test("413 context_length_exceeded over the cap; the compaction passes; after it the session passes", async () => {
    expect((await chat("build")).status).toBe(200); // no cap yet: measured at 5000
    await capTree("ses_c", 4000);
    const hitsBefore = upstreamHits;
    const capped = await chat("build");
    expect(capped.status).toBe(413);
    expect(capped.body.error?.code).toBe("context_length_exceeded");
    expect(capped.body.error?.message).not.toMatch(/rate limit|too many requests|try again/i);
    expect(capped.body.error?.message).toContain("5000");
    expect(upstreamHits).toBe(hitsBefore);

    // opencode's overflow compaction (agent compaction) goes through.
    prompt = 300;
    expect((await chat("compaction")).status).toBe(200);
    expect((await chat("build")).status).toBe(200);
    expect((await chat("build")).status).toBe(200); // measured at 300 now
    await store.flush();
    const statuses = store.db
      .prepare("SELECT status, refused, agent FROM requests WHERE session_id = 'ses_c' ORDER BY seq")
      .all();
    expect(statuses).toEqual([
      { status: 200, refused: 0, agent: "build" },
      { status: 413, refused: 1, agent: "build" },
      { status: 200, refused: 0, agent: "compaction" },
      { status: 200, refused: 0, agent: "build" },
      { status: 200, refused: 0, agent: "build" },
    ]);
  });

  test("the body names the session and the cap", async () => {
    const b = contextCapBody(
      { sessionId: "ses_x", agent: null, parent: null, pluginVersion: null },
      { cap: 200_000, tokens: 210_000 },
    );
    expect(b.error).toMatchObject({ code: "context_length_exceeded", type: "invalid_request_error" });
    expect(b.error.message).toContain("ses_x");
    expect(b.error.message).toContain("200000");
  });
});
