// The gate against a real upstream (node:http on loopback), served by
// @hono/node-server on a free port, driven with real HTTP clients.
import { once } from "node:events";
import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { createGateMetrics, type GateOptions } from "./index.ts";
import { keyedFetch, MemoryGateStore, type ServedGate, serveGate, TEST_CLIENT } from "./testing.ts";

// Every request below presents the test client key, as opencode presents its provider's apiKey.
const fetch = keyedFetch;

/** Narrows a value the test has just asserted to exist; fails loudly otherwise. */
function must<T>(v: T | null | undefined): T {
  if (v === null || v === undefined) throw new Error("expected a value");
  return v;
}

type Seen = { method: string; path: string; headers: IncomingMessage["headers"]; body: string };
type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void | Promise<void>;

interface Upstream {
  url: string; // ends in /v1
  port: number;
  seen: Seen[];
  handler: Handler;
  close(): Promise<void>;
}

async function startUpstream(): Promise<Upstream> {
  const sockets = new Set<Socket>();
  const up: Upstream = {
    url: "",
    port: 0,
    seen: [],
    handler: (_req, res) => {
      res.writeHead(500).end();
    },
    close: async () => {},
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      up.seen.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body });
      void up.handler(req, res, body);
    });
  });
  server.on("connection", (s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  up.port = (server.address() as AddressInfo).port;
  up.url = `http://127.0.0.1:${up.port}/v1`;
  up.close = () =>
    new Promise<void>((r) => {
      for (const s of sockets) s.destroy();
      server.close(() => r());
    });
  return up;
}

const USAGE = {
  prompt_tokens: 1000,
  completion_tokens: 200,
  total_tokens: 1200,
  prompt_tokens_details: { cached_tokens: 400 },
};
const PRICES = {
  "m-priced": { prompt: 3, completion: 15, cached: 0.3 },
  "m-nocache": { prompt: 2, completion: 8 },
};
const SECRET_PROMPT = "the secret task text 7f3a";

function chunkLine(obj: unknown): string {
  return `data: ${JSON.stringify(obj)}\n\n`;
}
const delta = (content: string) => ({
  object: "chat.completion.chunk",
  model: "m-priced",
  choices: [{ index: 0, delta: { content }, finish_reason: null }],
});
const usageChunk = { object: "chat.completion.chunk", model: "m-priced", choices: [], usage: USAGE };

/** Respond as a streaming upstream; `gate` (if given) is awaited between the first and the rest. */
function streamingHandler(gate?: Promise<void>): Handler {
  return async (_req, res, body) => {
    const b = JSON.parse(body);
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    res.write(chunkLine(delta("first ")));
    if (gate) await gate;
    res.write(chunkLine(delta("second")));
    res.write(chunkLine({ ...delta(""), choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }));
    if (b.stream_options?.include_usage === true) res.write(chunkLine(usageChunk));
    res.end("data: [DONE]\n\n");
  };
}

function chat(extra: Record<string, unknown> = {}) {
  return JSON.stringify({
    model: "m-priced",
    messages: [{ role: "user", content: SECRET_PROMPT }],
    ...extra,
  });
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([
    p,
    new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: nothing after ${ms} ms`)), ms)),
  ]);
}

describe("gate proxy (real upstream, real hono server)", () => {
  let up: Upstream;
  let gate: ServedGate;
  let store: MemoryGateStore;
  const metrics = createGateMetrics();
  const logs: string[] = [];
  const opts = (): GateOptions => ({
    upstream: up.url,
    apiKey: null,
    prices: PRICES,
    refusal: { status: 429, retry_after_s: null },
    maxBodyBytes: 64 * 1024,
    timeoutMs: 5000,
    store,
    metrics,
    log: (l) => logs.push(l),
    clientKeys: [TEST_CLIENT],
  });

  beforeAll(async () => {
    up = await startUpstream();
  });
  afterAll(async () => {
    await up.close();
  });
  afterEach(async () => {
    await gate?.close();
    up.seen.length = 0;
  });
  const start = async (over: Partial<GateOptions> = {}) => {
    store = new MemoryGateStore();
    gate = await serveGate({ ...opts(), ...over, store });
  };
  // A JSON POST to the gate's chat completions route, with the test client key.
  const complete = (headers: Record<string, string>, body: BodyInit, init: RequestInit = {}) =>
    fetch(`${gate.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
      ...init,
    });

  test("streams chunk by chunk: the first chunk reaches the client before the upstream sends the rest", async () => {
    await start();
    let release!: () => void;
    const released = new Promise<void>((r) => {
      release = r;
    });
    up.handler = streamingHandler(released);
    const res = await complete({ "x-router-conversation": "ses_stream" }, chat({ stream: true }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/event-stream");
    const reader = must(res.body).getReader();
    const dec = new TextDecoder();
    // The upstream holds the rest until we release it: a buffering proxy would deadlock here.
    const first = await withTimeout(reader.read(), 5000, "first chunk");
    expect(dec.decode(first.value)).toContain('"first "');
    let text = dec.decode(first.value);
    expect(text).not.toContain("second");
    release();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += dec.decode(value, { stream: true });
    }
    expect(text).toContain('"second"');
    expect(text).toContain("data: [DONE]");
    // The gate asked for usage on the client's behalf and hid the extra chunk.
    expect(JSON.parse(must(up.seen[0]).body).stream_options).toEqual({ include_usage: true });
    expect(text).not.toContain('"usage"');
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({
      session_id: "ses_stream",
      model: "m-priced",
      status: 200,
      prompt_tokens: 1000,
      completion_tokens: 200,
      cached_tokens: 400,
      context_tokens: 1000,
      refused: false,
    });
    // 600 fresh * 3 + 400 cached * 0.3 + 200 * 15, per million.
    expect(rec?.cost_usd).toBeCloseTo((600 * 3 + 400 * 0.3 + 200 * 15) / 1e6, 12);
  });

  test("a client that asked for usage gets the upstream's stream byte for byte", async () => {
    await start();
    up.handler = streamingHandler();
    const sent = chat({ stream: true, stream_options: { include_usage: true } });
    const res = await complete({ "x-session-id": "ses_own_usage" }, sent);
    const text = await res.text();
    expect(up.seen[0]?.body).toBe(sent); // not rewritten
    const expected =
      chunkLine(delta("first ")) +
      chunkLine(delta("second")) +
      chunkLine({ ...delta(""), choices: [{ index: 0, delta: {}, finish_reason: "stop" }] }) +
      chunkLine(usageChunk) +
      "data: [DONE]\n\n";
    expect(text).toBe(expected);
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ session_id: "ses_own_usage", prompt_tokens: 1000, completion_tokens: 200 });
  });

  test("non-streaming JSON passes through and its usage is recorded (no cached price: prompt price)", async () => {
    await start();
    const answer = {
      id: "x",
      object: "chat.completion",
      model: "m-nocache",
      choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }],
      usage: USAGE,
    };
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    };
    const res = await complete(
      { "x-router-conversation": "ses_json" },
      JSON.stringify({ model: "m-nocache", messages: [] }),
    );
    expect(await res.json()).toEqual(answer);
    expect(up.seen[0]?.path).toBe("/v1/chat/completions");
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ model: "m-nocache", prompt_tokens: 1000, cached_tokens: 400, status: 200 });
    expect(rec?.cost_usd).toBeCloseTo((1000 * 2 + 200 * 8) / 1e6, 12);
  });

  test("a refused session gets the configured status and body, never reaches upstream; another session passes", async () => {
    await start({ refusal: { status: 429, retry_after_s: 30 } });
    up.handler = streamingHandler();
    store.refuseSession("ses_stuck", "looping: read src/app.ts x21");
    const ask = (conv: string) => complete({ "x-router-conversation": conv }, chat({ stream: true }));
    const refused = await ask("ses_stuck");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("30");
    const body = await refused.json();
    expect(body.error.type).toBe("stallguard_refused");
    expect(body.error.code).toBe("session_refused");
    expect(body.error.message).toContain("ses_stuck");
    expect(body.error.message).toContain("looping: read src/app.ts x21");
    expect(body.error.message).toContain("/api/trees/ses_stuck/resume");
    expect(up.seen).toHaveLength(0);

    const other = await ask("ses_fine");
    expect(other.status).toBe(200);
    await other.text();
    expect(up.seen).toHaveLength(1);
    expect(up.seen[0]?.headers["x-router-conversation"]).toBe("ses_fine");

    const recs = await store.waitRecords(2);
    expect(recs.find((r) => r.session_id === "ses_stuck")).toMatchObject({
      refused: true,
      status: 429,
      prompt_tokens: null,
    });
    expect(metrics.render()).toMatch(/stallguard_gate_refusals_total\{scope="session"\} [1-9]/);
  });

  test("a tree refusal covers children (parent from x-parent-session-id), and the status is configurable", async () => {
    await start({ refusal: { status: 403, retry_after_s: null } });
    up.handler = streamingHandler();
    store.refuseTree("ses_root", "stopped by admin");
    const res = await fetch(`${gate.url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-session-id": "ses_child",
        "x-parent-session-id": "ses_root",
      },
      body: chat({ stream: true }),
    });
    expect(res.status).toBe(403);
    expect(res.headers.get("retry-after")).toBeNull();
    const body = await res.json();
    expect(body.error.code).toBe("tree_refused");
    expect(body.error.message).toContain("ses_child");
    expect(body.error.message).toContain("tree ses_root");
    expect(up.seen).toHaveLength(0);
    expect(store.decisions[0]).toEqual({
      sessionId: "ses_child",
      agent: null,
      parent: "ses_root",
      pluginVersion: null,
    });

    const state = await (await fetch(`${gate.url}/gate/ses_child`)).json();
    // The reason as the real decision words it (modes/gate-decision.ts): who, when, why.
    expect(state).toEqual({
      session_id: "ses_child",
      refused: true,
      scope: "tree",
      reason: "its session tree was stopped by test at 1970-01-01T00:00:00.001Z (stopped by admin)",
      root_id: "ses_root",
    });
    store.lift("ses_root");
    const lifted = await (await fetch(`${gate.url}/gate/ses_child`)).json();
    expect(lifted).toEqual({
      session_id: "ses_child",
      refused: false,
      scope: null,
      reason: null,
      root_id: "ses_root",
    });
    expect((await fetch(`${gate.url}/gate/${"x".repeat(300)}`)).status).toBe(400);
  });

  test("X-Router-* headers win over opencode's own; x-session-id is the fallback", async () => {
    await start();
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    };
    const send = (headers: Record<string, string>) => complete(headers, chat()).then((r) => r.text());
    await send({ "x-session-id": "ses_a", "x-parent-session-id": "ses_p" });
    await send({
      "x-session-id": "ses_a",
      "x-router-conversation": "ses_b",
      "x-parent-session-id": "ses_p",
      "x-router-parent": "ses_q",
      "x-router-agent": "build",
      "x-stallguard-plugin": "0.1.0",
    });
    await send({ "x-router-conversation": "bad value with spaces", "x-session-id": "ses_c" });
    expect(store.decisions).toEqual([
      { sessionId: "ses_a", agent: null, parent: "ses_p", pluginVersion: null },
      { sessionId: "ses_b", agent: "build", parent: "ses_q", pluginVersion: "0.1.0" },
      { sessionId: "ses_c", agent: null, parent: null, pluginVersion: null },
    ]);
    const recs = await store.waitRecords(3);
    expect(recs[1]).toMatchObject({
      session_id: "ses_b",
      agent: "build",
      parent: "ses_q",
      plugin_version: "0.1.0",
    });
  });

  test("the plugin's report headers reach the store and never the upstream", async () => {
    await start();
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    };
    const plugin = {
      "x-router-conversation": "ses_r",
      "x-stallguard-plugin": "0.1.0",
      "x-stallguard-instance": "sg_abc",
      "x-stallguard-report-to": "http://127.0.0.1:4870",
      "x-stallguard-report-state": "failing",
    };
    await (await complete(plugin, chat())).text();
    await (
      await complete(
        { ...plugin, "x-stallguard-report-to": "ftp://x", "x-stallguard-report-state": "??" },
        chat(),
      )
    ).text();
    expect(store.decisions.map((d) => d.link)).toEqual([
      { instanceId: "sg_abc", reportTo: "http://127.0.0.1:4870", state: "failing" },
      { instanceId: "sg_abc", reportTo: null, state: null },
    ]);
    for (const seen of up.seen) {
      expect(
        Object.keys(seen.headers).filter(
          (h) => h.startsWith("x-stallguard-report") || h === "x-stallguard-instance",
        ),
      ).toEqual([]);
      expect(seen.headers["x-stallguard-plugin"]).toBe("0.1.0");
    }
  });

  test("GET /gate says whose client key a bearer token is, and 401 for any other (nothing goes upstream)", async () => {
    await start();
    const ok = await fetch(`${gate.url}/gate`);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ client: TEST_CLIENT.name });
    const wrong = await fetch(`${gate.url}/gate`, { headers: { authorization: "Bearer not-a-key" } });
    expect(wrong.status).toBe(401);
    expect(((await wrong.json()) as { error: { message: string } }).error.message).toContain(
      "an unknown client key",
    );
    expect(up.seen).toEqual([]);
    expect(store.decisions).toEqual([]);
  });

  test("Authorization is replaced by the configured key, hop-by-hop headers are dropped", async () => {
    await start({ apiKey: "sk-configured" });
    up.handler = (_req, res) => {
      res
        .writeHead(200, {
          "content-type": "application/json",
          "x-upstream-hop": "1",
          connection: "x-upstream-hop",
        })
        .end("{}");
    };
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      const r = httpRequest(
        `${gate.url}/v1/models?x=1`,
        {
          headers: {
            authorization: `Bearer ${TEST_CLIENT.key}`,
            connection: "keep-alive, x-drop-me",
            "x-drop-me": "1",
            "proxy-authorization": "Basic abc",
            te: "trailers",
            "x-keep-me": "2",
          },
        },
        resolve,
      );
      r.on("error", reject);
      r.end();
    });
    res.resume();
    const h = must(up.seen[0]).headers;
    expect(up.seen[0]?.path).toBe("/v1/models?x=1");
    expect(h.authorization).toBe("Bearer sk-configured");
    expect(h["x-drop-me"]).toBeUndefined();
    expect(h["proxy-authorization"]).toBeUndefined();
    expect(h.te).toBeUndefined();
    expect(h["x-keep-me"]).toBe("2");
    expect(h["accept-encoding"]).toBe("identity");
    expect(res.headers["x-upstream-hop"]).toBeUndefined();
  });

  test("the client key never goes upstream: without an upstream key no Authorization goes up", async () => {
    await start();
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    };
    await (await fetch(`${gate.url}/v1/models`)).text();
    expect(up.seen).toHaveLength(1);
    expect(up.seen[0]?.headers.authorization).toBeUndefined();
  });

  test("no client key, or an unknown one: 401 naming what to set; nothing forwarded, learnt or recorded", async () => {
    await start({ apiKey: "sk-upstream", clientKeyHint: '"{env:STALLGUARD_CLIENT_KEY}"' });
    up.handler = streamingHandler();
    for (const authorization of [undefined, "Bearer wrong-key", "Basic abc", `Bearer ${TEST_CLIENT.key}x`]) {
      const res = await globalThis.fetch(`${gate.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-session-id": "ses_thief",
          ...(authorization ? { authorization } : {}),
        },
        body: chat({ stream: true }),
      });
      expect(res.status, authorization ?? "none").toBe(401);
      const body = await res.json();
      expect(body.error.code).toBe("invalid_api_key");
      expect(body.error.message).toContain('"apiKey" in opencode.json');
      expect(body.error.message).toContain("{env:STALLGUARD_CLIENT_KEY}");
    }
    expect(up.seen).toHaveLength(0);
    expect(store.decisions).toEqual([]);
    expect(store.records).toEqual([]);
    expect(metrics.render()).toMatch(/stallguard_gate_unauthorized_total [4-9]/);
  });

  test("the record names the client key; GET /gate and GET /v1 learn and record nothing", async () => {
    await start({ clientKeys: [{ name: "alice", key: "alice-key-0123" }, TEST_CLIENT] });
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    };
    await (
      await fetch(`${gate.url}/v1/chat/completions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-session-id": "ses_a",
          authorization: "Bearer alice-key-0123",
        },
        body: chat(),
      })
    ).text();
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ session_id: "ses_a", client: "alice", error: null, response_bytes: 2 });
    for (let i = 0; i < 5; i++) {
      await (await fetch(`${gate.url}/gate/ses_img${i}`)).text();
      await (await fetch(`${gate.url}/v1/models`, { headers: { "x-session-id": `ses_get${i}` } })).text();
    }
    expect(store.decisions).toHaveLength(1);
    expect(store.records).toHaveLength(1);
  });

  test("an oversized body gets 413, with or without content-length, and is not forwarded", async () => {
    await start({ maxBodyBytes: 2048 });
    up.handler = streamingHandler();
    const big = chat({ pad: "x".repeat(4096) });
    const a = await complete({ "x-session-id": "ses_big" }, big);
    expect(a.status).toBe(413);
    expect((await a.json()).error.code).toBe("request_too_large");
    // Chunked (no content-length): the cap is enforced while reading.
    const bytes = new TextEncoder().encode(big);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 512) c.enqueue(bytes.slice(i, i + 512));
        c.close();
      },
    });
    const b = await fetch(`${gate.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(b.status).toBe(413);
    expect(up.seen).toHaveLength(0);
  });

  test("upstream down: 502 with an OpenAI error body", async () => {
    const dead = await startUpstream();
    const deadUrl = dead.url;
    await dead.close();
    await start({ upstream: deadUrl });
    const res = await complete({ "x-session-id": "ses_down" }, chat({ stream: true }));
    expect(res.status).toBe(502);
    const body = await res.json();
    expect(body.error.code).toBe("upstream_unreachable");
    expect(body.error.message).toContain("ECONNREFUSED");
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ session_id: "ses_down", status: 502, model: "m-priced" });
    expect(metrics.render()).toMatch(/stallguard_gate_upstream_errors_total\{kind="unreachable"\} [1-9]/);
  });

  test("a hanging upstream: 504 after the timeout", async () => {
    await start({ timeoutMs: 300 });
    up.handler = () => {}; // never answers
    const res = await complete({ "x-session-id": "ses_hang" }, chat());
    expect(res.status).toBe(504);
    expect((await res.json()).error.code).toBe("upstream_timeout");
    expect(up.seen).toHaveLength(1);
  });

  test("a stream that goes silent mid-body is cut after the timeout", async () => {
    await start({ timeoutMs: 300 });
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunkLine(delta("first ")));
      // then silence
    };
    const res = await complete({ "x-session-id": "ses_silent" }, chat({ stream: true }));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    const [rec] = await store.waitRecords(1);
    const first = new TextEncoder().encode(chunkLine(delta("first "))).length;
    expect(rec).toMatchObject({
      session_id: "ses_silent",
      status: 200,
      prompt_tokens: null,
      error: "idle_timeout",
      response_bytes: first,
    });
  });

  test("a stream the upstream breaks halfway is recorded as failed, with the bytes that got through", async () => {
    await start();
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunkLine(delta("first ")));
      setTimeout(() => res.socket?.destroy(), 50);
    };
    const res = await complete({ "x-session-id": "ses_broken" }, chat({ stream: true }));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({
      session_id: "ses_broken",
      status: 200,
      error: "upstream_stream",
      response_bytes: new TextEncoder().encode(chunkLine(delta("first "))).length,
    });
    expect(logs.some((l) => /upstream body failed .* after \d+ bytes/.test(l))).toBe(true);
  });

  test("a client gone before the answer: the upstream request goes too, recorded as 499", async () => {
    await start({ timeoutMs: 60_000 });
    let closed: Promise<unknown> | undefined;
    up.handler = (_req, res) => {
      closed = once(res, "close"); // never answered: only the gate's abort ends it
    };
    const ac = new AbortController();
    const pending = complete({ "x-session-id": "ses_gone" }, chat(), { signal: ac.signal });
    await withTimeout(
      (async () => {
        while (up.seen.length === 0) await new Promise((r) => setTimeout(r, 5));
      })(),
      5000,
      "the upstream request",
    );
    ac.abort();
    await expect(pending).rejects.toThrow();
    await withTimeout(must(closed), 5000, "the upstream request closed");
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ session_id: "ses_gone", status: 499, error: "client_abort" });
  });

  test("a client gone mid-stream: the upstream answer is cut and the bytes that reached it recorded", async () => {
    await start({ timeoutMs: 60_000 });
    let closed: Promise<unknown> | undefined;
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunkLine(delta("first ")));
      closed = once(res, "close"); // the rest never comes
    };
    const ac = new AbortController();
    const res = await complete({ "x-session-id": "ses_left" }, chat({ stream: true }), { signal: ac.signal });
    const reader = must(res.body).getReader();
    await reader.read();
    ac.abort();
    await withTimeout(must(closed), 5000, "the upstream answer closed");
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({
      session_id: "ses_left",
      status: 200,
      error: "client_abort",
      response_bytes: new TextEncoder().encode(chunkLine(delta("first "))).length,
    });
  });

  test("a streamed body that goes over the cap is cut: 413 to the client, the upstream request aborted", async () => {
    await start({ maxBodyBytes: 2 * 1024 * 1024 });
    up.handler = streamingHandler();
    const piece = new TextEncoder().encode("z".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(c) {
        if (sent === 0) c.enqueue(new TextEncoder().encode('{"model":"m-priced","pad":"'));
        if (sent > 3 * 1024 * 1024) return c.close();
        sent += piece.length;
        c.enqueue(piece);
      },
    });
    const res = await fetch(`${gate.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": "ses_over" },
      body: stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(413);
    expect((await res.json()).error.code).toBe("request_too_large");
    // Whatever reached the upstream was never a whole request it answered.
    expect(up.seen.every((s) => s.body.length < 2 * 1024 * 1024 + 1)).toBe(true);
  });

  test("a body over the buffer streams up intact, its model read and usage asked for", async () => {
    await start({ maxBodyBytes: 8 * 1024 * 1024 });
    up.handler = streamingHandler();
    const pad = "y".repeat(3 * 1024 * 1024);
    const res = await complete({ "x-session-id": "ses_huge" }, chat({ pad, stream: true }));
    expect(res.status).toBe(200);
    expect(await res.text()).not.toContain('"usage"');
    const sent = JSON.parse(must(up.seen[0]).body);
    expect(sent.pad.length).toBe(pad.length);
    expect(sent.stream_options).toEqual({ include_usage: true });
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ model: "m-priced", prompt_tokens: 1000, error: null });
  });

  test("no upstream configured: 503, refusals still apply", async () => {
    await start({ upstream: null });
    store.refuseSession("ses_x", "stopped");
    const a = await fetch(`${gate.url}/v1/models`, { headers: { "x-session-id": "ses_y" } });
    expect(a.status).toBe(503);
    expect((await a.json()).error.code).toBe("no_upstream");
    const b = await fetch(`${gate.url}/v1/models`, { headers: { "x-session-id": "ses_x" } });
    expect(b.status).toBe(429);
  });

  test("a failing store lets the request through and is counted", async () => {
    store = new MemoryGateStore();
    gate = await serveGate({
      ...opts(),
      store: {
        decide: () => {
          throw new Error("disk on fire");
        },
        peek: () => {
          throw new Error("disk on fire");
        },
        recordRequest: () => Promise.reject(new Error("disk on fire")),
      },
    });
    up.handler = (_req, res) => {
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    };
    const res = await fetch(`${gate.url}/v1/models`, { headers: { "x-session-id": "ses_z" } });
    expect(res.status).toBe(200);
    expect(metrics.render()).toMatch(/stallguard_gate_store_errors_total [1-9]/);
  });

  test("no request or response body ends up in records or logs", async () => {
    // Runs last: everything above used SECRET_PROMPT in its requests.
    expect(logs.length).toBeGreaterThan(0);
    const everything = JSON.stringify(store.records) + logs.join("\n");
    expect(everything).not.toContain(SECRET_PROMPT);
    expect(everything).not.toContain("second");
  });
});

describe("gate metrics", () => {
  test("render gives Prometheus text with HELP/TYPE and the overhead histogram", () => {
    const m = createGateMetrics();
    m.request();
    m.request();
    m.refusal("tree");
    m.upstreamError("timeout");
    m.observeOverhead(0.3);
    m.observeOverhead(7);
    const text = m.render();
    for (const part of [
      "# TYPE stallguard_gate_requests_total counter\nstallguard_gate_requests_total 2\n",
      'stallguard_gate_refusals_total{scope="tree"} 1',
      'stallguard_gate_refusals_total{scope="session"} 0',
      'stallguard_gate_upstream_errors_total{kind="timeout"} 1',
      "# TYPE stallguard_gate_overhead_seconds histogram",
      'stallguard_gate_overhead_seconds_bucket{le="0.0005"} 1',
      'stallguard_gate_overhead_seconds_bucket{le="0.01"} 2',
      'stallguard_gate_overhead_seconds_bucket{le="+Inf"} 2',
      "stallguard_gate_overhead_seconds_count 2",
    ])
      expect(text).toContain(part);
    for (const line of text.trim().split("\n")) {
      expect(line).toMatch(/^(# (HELP|TYPE) \S+ .+|[a-z_]+(\{[a-z]+="[^"]+"\})? [0-9.e+-]+)$/);
    }
  });
});
