import { describe, expect, test } from "vitest";
import { BodyRewriter, concat } from "./request-body.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Runs a body through the rewriter in chunks of `size` bytes; returns the output text and the rewriter. */
function run(body: string, size: number, opts: ConstructorParameters<typeof BodyRewriter>[0]) {
  const bytes = enc.encode(body);
  const rw = new BodyRewriter(opts);
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(...rw.push(bytes.slice(i, i + size)));
  out.push(...rw.end());
  return { text: dec.decode(concat(out)), rw };
}

const SIZES = [1, 2, 3, 7, 64, 100_000];

/** A streaming body whose model "real" the breaker reroutes: what every chunking reads, and the body sent. */
function expectRerouted(body: string, sent: unknown) {
  for (const size of SIZES) {
    const { text, rw } = run(body, size, {
      completions: true,
      onModel: (m) => (m === "real" ? "fallback" : null),
    });
    expect(rw.model, `size ${size}`).toBe("real");
    expect(rw.stream).toBe(true);
    expect(rw.injected).toBe(true);
    expect(JSON.parse(text)).toEqual(sent);
  }
}

describe("BodyRewriter", () => {
  test("reads model and stream from any chunking, leaves the rest byte for byte", () => {
    const body = JSON.stringify({
      messages: [{ role: "user", content: 'a "quoted" \\ {brace} [x], "model": "fake"' }],
      model: "gpt-x",
      nested: { model: "inner", stream: false },
      stream: false,
    });
    for (const size of SIZES) {
      const { text, rw } = run(body, size, { completions: true });
      expect(text, `size ${size}`).toBe(body);
      expect(rw.model).toBe("gpt-x");
      expect(rw.stream).toBe(false);
      expect(rw.injected).toBe(false);
    }
  });

  test("reads only keys spelled exactly model, stream and stream_options", () => {
    const long = `model${"x".repeat(80)}`;
    // The real keys first: a lookalike read as one of them would change what was read.
    const body = `{"model":"real","stream":true,"models":"a","mode":"b","streams":false,"stream_option":{"include_usage":false},"${long}":"d"}`;
    expectRerouted(body, { ...JSON.parse(body), model: "fallback", stream_options: { include_usage: true } });
  });

  test("reads a watched key spelled with escapes, as the upstream's JSON parser will", () => {
    const esc = (key: string) =>
      [...key].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
    const body = `{"mod\\u0065l":"real","\\u0073tream":true,"${esc("stream_options")}":{"include_usage":false}}`;
    expectRerouted(body, { model: "fallback", stream: true, stream_options: { include_usage: true } });
  });

  test("asks for usage on a streaming completion without stream_options", () => {
    const body = `{ "model" : "m", "messages": [], "stream" : true }`;
    for (const size of SIZES) {
      const { text, rw } = run(body, size, { completions: true });
      expect(JSON.parse(text)).toEqual({
        model: "m",
        messages: [],
        stream: true,
        stream_options: { include_usage: true },
      });
      expect(rw.injected).toBe(true);
    }
    const { text, rw } = run(body, 5, { completions: false });
    expect(text).toBe(body);
    expect(rw.injected).toBe(false);
  });

  test("adds include_usage to stream_options after stream:true, and leaves include_usage:true alone", () => {
    const a = `{"model":"m","stream":true,"stream_options":{"x":1}}`;
    for (const size of SIZES) {
      const { text, rw } = run(a, size, { completions: true });
      expect(JSON.parse(text)).toEqual({
        model: "m",
        stream: true,
        stream_options: { x: 1, include_usage: true },
      });
      expect(rw.injected).toBe(true);
    }
    const b = `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`;
    for (const size of SIZES) {
      const { text, rw } = run(b, size, { completions: true });
      expect(text).toBe(b);
      expect(rw.injected).toBe(false);
    }
  });

  test("replaces the model with the breaker's fallback", () => {
    const body = `{"model":"open-model","messages":[{"content":"model"}],"stream":false}`;
    for (const size of SIZES) {
      const seen: string[] = [];
      const { text } = run(body, size, {
        completions: true,
        onModel: (m) => {
          seen.push(m);
          return "fallback";
        },
      });
      expect(JSON.parse(text)).toEqual({
        model: "fallback",
        messages: [{ content: "model" }],
        stream: false,
      });
      expect(seen).toEqual(["open-model"]);
    }
  });

  test("escaped quotes and backslash runs, split at every byte, never end a string early", () => {
    const tricky = ['a\\"}', "\\\\", 'x\\\\"]{', '"', "\\", "}]},{[", "\u0022model\u0022"];
    const body = JSON.stringify({
      messages: tricky.map((content) => ({
        role: "user",
        content,
        tool: { args: [content, { k: content }] },
      })),
      model: "the-model",
      tools: [{ description: tricky.join(""), parameters: { type: "object" } }],
      stream: true,
    });
    for (const size of [1, 2, 3, 5, 7, 11, 64, 100_000]) {
      const { text, rw } = run(body, size, { completions: true });
      expect(rw.model, `size ${size}`).toBe("the-model");
      expect(JSON.parse(text)).toEqual({ ...JSON.parse(body), stream_options: { include_usage: true } });
      expect(text.slice(0, -1).startsWith(body.slice(0, -1))).toBe(true); // added at the end, nothing else moved
    }
  });

  test("passes a body that is not a JSON object through untouched", () => {
    for (const body of ["[1,2]", '"model"', "not json {", ""]) {
      const { text, rw } = run(body, 2, { completions: true, onModel: () => "x" });
      expect(text).toBe(body);
      expect(rw.model).toBeNull();
    }
  });

  test("a watched value longer than the hold cap passes through unread", () => {
    const body = JSON.stringify({ model: "m".repeat(10_000), stream: true });
    const { text, rw } = run(body, 1000, { completions: false });
    expect(text).toBe(body);
    expect(rw.model).toBeNull();
    expect(rw.stream).toBe(true);
  });
});
