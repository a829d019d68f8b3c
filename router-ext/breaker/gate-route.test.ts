// The gate's modelRoute hook (the breaker's fallback routing) against a real
// loopback upstream: the upstream sees the fallback model with the rest of the
// body intact (streaming usage injection included), the client sees the
// x-stallguard-breaker header, the request is recorded under the model used,
// and a throwing hook or a null answer leaves the request alone.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { GateOptions } from "../gate/index.ts";
import {
  keyedFetch as fetch,
  MemoryGateStore,
  type ServedGate,
  serveGate,
  TEST_CLIENT,
} from "../gate/testing.ts";

interface Seen {
  body: string;
}

describe("gate modelRoute (real upstream, real gate)", () => {
  let upstream: Server;
  let upUrl = "";
  const seen: Seen[] = [];
  let gate: ServedGate | undefined;
  let store: MemoryGateStore;
  const logs: string[] = [];

  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let raw = "";
      req.setEncoding("utf8");
      req.on("data", (d: string) => {
        raw += d;
      });
      req.on("end", () => {
        seen.push({ body: raw });
        const b = JSON.parse(raw);
        if (b.stream) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write(
            `data: ${JSON.stringify({ model: b.model, choices: [{ index: 0, delta: { content: "hi" } }] })}\n\n`,
          );
          if (b.stream_options?.include_usage)
            res.write(
              `data: ${JSON.stringify({ model: b.model, choices: [], usage: { prompt_tokens: 7, completion_tokens: 1, total_tokens: 8 } })}\n\n`,
            );
          res.end("data: [DONE]\n\n");
          return;
        }
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ model: b.model, choices: [], usage: { prompt_tokens: 5, completion_tokens: 1 } }),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
    upUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1`;
  });
  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise<void>((r) => upstream.close(() => r()));
  });
  afterEach(async () => {
    await gate?.close();
    seen.length = 0;
  });

  const start = async (modelRoute: GateOptions["modelRoute"]) => {
    store = new MemoryGateStore();
    gate = await serveGate({
      clientKeys: [TEST_CLIENT],
      upstream: upUrl,
      apiKey: null,
      prices: {},
      refusal: { status: 429, retry_after_s: null },
      maxBodyBytes: 64 * 1024,
      timeoutMs: 5000,
      store,
      log: (l) => logs.push(l),
      modelRoute,
    });
    return gate;
  };
  const post = (g: ServedGate, body: unknown) =>
    fetch(`${g.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-router-conversation": "ses_route" },
      body: JSON.stringify(body),
    });

  it("rewrites the model, keeps the rest of the body, adds the header, records the model used", async () => {
    const asked: string[] = [];
    const g = await start((m, identity) => {
      asked.push(`${m}@${identity.sessionId}`);
      return m === "bad/m" ? { model: "good/m", header: "bad/m -> good/m" } : null;
    });
    const res = await post(g, {
      model: "bad/m",
      messages: [{ role: "user", content: "x" }],
      temperature: 0.2,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-stallguard-breaker")).toBe("bad/m -> good/m");
    expect(((await res.json()) as { model: string }).model).toBe("good/m");
    const up = JSON.parse(seen[0]?.body ?? "{}");
    expect(up).toEqual({ model: "good/m", messages: [{ role: "user", content: "x" }], temperature: 0.2 });
    const [rec] = await store.waitRecords(1);
    expect(rec).toMatchObject({ model: "good/m", session_id: "ses_route", prompt_tokens: 5 });
    expect(asked).toEqual(["bad/m@ses_route"]);

    // Streaming: the usage request the gate adds survives the rewrite and stays hidden.
    const s = await post(g, { model: "bad/m", stream: true, messages: [] });
    expect(s.headers.get("x-stallguard-breaker")).toBe("bad/m -> good/m");
    const text = await s.text();
    expect(text).toContain('"good/m"');
    expect(text).not.toContain('"usage"');
    const up2 = JSON.parse(seen[1]?.body ?? "{}");
    expect(up2).toMatchObject({ model: "good/m", stream: true, stream_options: { include_usage: true } });
    const recs = await store.waitRecords(2);
    expect(recs[1]).toMatchObject({ model: "good/m", prompt_tokens: 7 });
  });

  it("leaves the request alone when the hook answers null or throws", async () => {
    const g = await start((m) => {
      if (m === "boom") throw new Error("broken");
      return null;
    });
    const a = await post(g, { model: "ok/m", messages: [] });
    expect(a.headers.get("x-stallguard-breaker")).toBeNull();
    expect(JSON.parse(seen[0]?.body ?? "{}").model).toBe("ok/m");
    const b = await post(g, { model: "boom", messages: [] });
    expect(b.status).toBe(200);
    expect(JSON.parse(seen[1]?.body ?? "{}").model).toBe("boom");
    expect(logs.some((l) => l.includes("modelRoute failed"))).toBe(true);
  });
});
