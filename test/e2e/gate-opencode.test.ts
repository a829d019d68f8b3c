// The gate in front of the scripted model, with the real opencode binary as
// the client: opencode's requests pass through and are attributed to its
// session id (x-session-id, no plugin), and a refused session costs opencode a
// measured number of requests and time before it shows the error, per refusal
// shape. One opencode serve; one gate per refusal shape, all on one store.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MemoryGateStore, type ServedGate, serveGate, TEST_CLIENT } from "../../router-ext/gate/testing.ts";
import { type ModelServer, scriptRouter, startModelServer, steps } from "../helpers/model-server.ts";
import { MODEL_ID, type OpencodeServer, PROVIDER_ID, startOpencode } from "../helpers/opencode.ts";

type Shape = { name: string; provider: string; status: number; retry_after_s: number | null; reason: string };
const LOOPING = "looping: read src/app.ts x21";
// opencode's retry matcher also retries a 4xx whose body contains 429|500|502|503|504|524:
// session ids and reasons can contain such digit runs, so measure that case too.
const UNLUCKY = "looping: 500 turns since landed";
const RETRY_DIGITS = /429|500|502|503|504|524/;
const SHAPES: Shape[] = [
  { name: "429", provider: PROVIDER_ID, status: 429, retry_after_s: null, reason: LOOPING },
  { name: "429 + retry-after: 0", provider: "gate429ra0", status: 429, retry_after_s: 0, reason: LOOPING },
  { name: "403", provider: "gate403", status: 403, retry_after_s: null, reason: LOOPING },
  // The default shape (shared/config.ts progress.refusal).
  { name: "403 + retry-after: 0", provider: "gate403ra0c", status: 403, retry_after_s: 0, reason: LOOPING },
  { name: "403, body with 500", provider: "gate403d", status: 403, retry_after_s: null, reason: UNLUCKY },
  {
    name: "403 + retry-after: 0, body with 500",
    provider: "gate403ra0",
    status: 403,
    retry_after_s: 0,
    reason: UNLUCKY,
  },
];
const PRICES = { [MODEL_ID]: { prompt: 3, completion: 15, cached: 0.3 } };
const USAGE = { prompt_tokens: 1000, completion_tokens: 20, cached_tokens: 400 };

function provider(baseURL: string) {
  return {
    npm: "@ai-sdk/openai-compatible",
    name: "Gate",
    options: { baseURL, apiKey: TEST_CLIENT.key },
    models: { [MODEL_ID]: { name: MODEL_ID, limit: { context: 200000, output: 4096 } } },
  };
}

describe("gate with real opencode", () => {
  const router = scriptRouter();
  const store = new MemoryGateStore();
  const gates = new Map<string, ServedGate>();
  let model: ModelServer;
  let oc: OpencodeServer;

  beforeAll(async () => {
    model = await startModelServer({ script: router.script, usage: USAGE });
    for (const s of SHAPES) {
      gates.set(
        s.name,
        await serveGate({
          upstream: model.url,
          apiKey: null,
          prices: PRICES,
          refusal: { status: s.status, retry_after_s: s.retry_after_s },
          maxBodyBytes: 50 * 1024 * 1024,
          timeoutMs: 60_000,
          store,
          clientKeys: [TEST_CLIENT],
        }),
      );
    }
    const url = (name: string) => `${gates.get(name)?.url}/v1`;
    const extra = Object.fromEntries(
      SHAPES.filter((s) => s.provider !== PROVIDER_ID).map((s) => [s.provider, provider(url(s.name))]),
    );
    oc = await startOpencode({
      modelUrl: url("429"),
      apiKey: TEST_CLIENT.key,
      opencodeConfig: { provider: extra },
      projectFiles: { "README.md": "# scratch\n" },
      git: true,
    });
  });

  afterAll(async () => {
    await oc?.stop();
    for (const g of gates.values()) await g.close();
    await model?.close();
  });

  test("opencode's requests pass through the gate, recorded under its session id with usage and cost", async () => {
    const s = await oc.createSession(); // untitled: the title request goes through the gate too
    router.on(
      s.id,
      steps(
        { kind: "tools", calls: [{ name: "bash", args: { command: "echo hi", description: "Echo" } }] },
        { kind: "text", text: "Done." },
      ),
    );
    await oc.prompt(s.id, "run echo");
    const upstreamSeen = model.requests.filter((r) => r.sessionId === s.id);
    expect(upstreamSeen.length).toBeGreaterThanOrEqual(3); // title + tool step + text step
    const recs = await store.waitRecords(upstreamSeen.length);
    const mine = recs.filter((r) => r.session_id === s.id);
    expect(mine).toHaveLength(upstreamSeen.length);
    for (const r of mine) {
      expect(r).toMatchObject({
        status: 200,
        refused: false,
        model: MODEL_ID,
        prompt_tokens: 1000,
        completion_tokens: 20,
        cached_tokens: 400,
      });
      expect(r.cost_usd).toBeCloseTo((600 * 3 + 400 * 0.3 + 20 * 15) / 1e6, 12);
    }
    // The usage chunk reached opencode intact (it asks for usage itself).
    const asked = upstreamSeen.map((r) => r.body?.stream_options?.include_usage === true);
    console.log(
      `[gate] opencode sent include_usage itself: ${asked.every(Boolean)} (${asked.length} requests)`,
    );
    const msgs = await oc.messages(s.id);
    const assistant = msgs.filter((m) => m.info.role === "assistant");
    expect(assistant.at(-1)?.info.tokens.cache.read).toBe(400);
  });

  async function measure(shape: Shape) {
    const s = await oc.createSession({ title: `refused ${shape.name}` }); // titled: no title request
    store.refuseSession(s.id, shape.reason);
    const ev = oc.events();
    await ev.ready;
    const errorSeen = ev
      .waitFor((e) => e.type === "session.error" && e.properties?.sessionID === s.id, 150_000)
      .then((e) => ({ at: Date.now(), event: e }));
    // A retry status comes before the error, if at all: stop waiting for it once the error is in.
    const retrySeen = Promise.race([
      ev
        .waitFor(
          (e) =>
            e.type === "session.status" &&
            e.properties?.sessionID === s.id &&
            e.properties?.status?.type === "retry",
          150_000,
        )
        .then((e) => ({ at: Date.now(), message: e.properties.status.message as string | undefined }))
        .catch(() => null),
      errorSeen.then(() => null),
    ]);
    await oc.api("POST", `/session/${s.id}/prompt_async`, {
      parts: [{ type: "text", text: "go" }],
      model: { providerID: shape.provider, modelID: MODEL_ID },
    });
    const err = await errorSeen;
    await oc.waitIdle(s.id, 30_000);
    ev.stop();
    const refused = store.records.filter((r) => r.session_id === s.id);
    const first = Math.min(...refused.map((r) => r.started_at));
    const retryAt = await retrySeen;
    const msgs = await oc.messages(s.id);
    const shown = msgs.at(-1)?.info.error?.data?.message as string | undefined;
    return {
      session: s.id,
      shape: shape.name,
      requests: refused.length,
      allRefused: refused.every((r) => r.refused && r.status === shape.status),
      upstreamSaw: model.requests.filter((r) => r.sessionId === s.id).length,
      msToError: err.at - first,
      msToRetryBanner: retryAt === null ? null : retryAt.at - first,
      retryMessage: retryAt?.message,
      errorEventMessage: err.event.properties?.error?.data?.message as string | undefined,
      shown,
    };
  }

  test("a refused session: requests per refusal and time to the error, per refusal shape", async () => {
    const results = await Promise.all(SHAPES.map((s) => measure(s)));
    console.log(
      `[gate] refusal figures ${JSON.stringify(results.map(({ shape, requests, msToError, msToRetryBanner }) => ({ shape, requests, msToError, msToRetryBanner })))}`,
    );
    for (const r of results) {
      console.log(
        `[gate] refusal ${r.shape}: ${r.requests} request(s) refused, error after ${r.msToError} ms` +
          `${r.msToRetryBanner === null ? "" : `, retry banner with the message after ${r.msToRetryBanner} ms`}`,
      );
      expect(r.upstreamSaw).toBe(0);
      expect(r.allRefused).toBe(true);
      expect(r.requests).toBeGreaterThanOrEqual(1);
      expect(r.shown ?? r.errorEventMessage).toContain(`stallguard stopped session ${r.session}`);
    }
    const by = Object.fromEntries(results.map((r) => [r.shape, r]));
    // opencode retries 429 (5 retries: 6 requests) and stops at once on a plain 403.
    expect(by["429"]?.requests).toBe(6);
    expect(by["429 + retry-after: 0"]?.requests).toBe(6);
    // A session id can itself hold a retry digit run (then the 403 is retried like a 429).
    const plain = (name: string) => (RETRY_DIGITS.test(by[name]?.session ?? "") ? 6 : 1);
    expect(by["403"]?.requests).toBe(plain("403"));
    expect(by["403 + retry-after: 0"]?.requests).toBe(plain("403 + retry-after: 0"));
    // ...unless the body holds one of its retry digit runs.
    expect(by["403, body with 500"]?.requests).toBe(6);
    expect(by["403 + retry-after: 0, body with 500"]?.requests).toBe(6);
    // While it retries, the retry status carries the refusal message (the user sees it at once).
    expect(by["429"]?.retryMessage).toContain("stallguard stopped session");
  });

  test("after the refusal is lifted the same session goes through", async () => {
    const s = await oc.createSession({ title: "lifted" });
    router.on(s.id, steps({ kind: "text", text: "back" }));
    // A reason with a retry digit run, as about one session id in seventy has: opencode retries
    // the refusal; with the default shape (403 + retry-after: 0) at once, so the session is idle
    // well within the wait (with no retry-after its backoff took over a minute).
    store.refuseSession(s.id, UNLUCKY);
    await oc.api("POST", `/session/${s.id}/prompt_async`, {
      parts: [{ type: "text", text: "go" }],
      model: { providerID: "gate403ra0c", modelID: MODEL_ID },
    });
    await oc.waitIdle(s.id, 30_000);
    expect(model.requests.filter((r) => r.sessionId === s.id)).toHaveLength(0);
    store.lift(s.id);
    await oc.prompt(s.id, "again");
    expect(model.requests.filter((r) => r.sessionId === s.id)).toHaveLength(1);
    const last = (await oc.messages(s.id)).at(-1);
    expect(last?.info.error).toBeUndefined();
    expect(last?.parts.some((p) => p.type === "text" && p.text === "back")).toBe(true);
  });
});
