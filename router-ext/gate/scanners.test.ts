import { describe, expect, test } from "vitest";
import { jsonScanner, sseScanner } from "./scanners.ts";
import { UsageTracker } from "./usage.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const usageLine =
  'data: {"id":"c","model":"m-1","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3}}';
// Whole events, a multi-byte character, CRLF and CR terminators, then the usage-only chunk.
const head = 'data: {"choices":[{"delta":{"content":"caf\u00e9 \u2713"}}]}\r\n\r\ndata: {"choices":[]}\r\r';
const STREAM = `${head}${usageLine}\n\ndata: [DONE]\n\n`;

/** Feeds `bytes` cut at `cuts` through a scanner; the bytes out and what the tracker saw. */
function scan(hide: boolean, bytes: Uint8Array, cuts: number[]) {
  const tracker = new UsageTracker();
  const s = sseScanner(tracker, hide);
  const out: string[] = [];
  const decoder = new TextDecoder("utf-8", { ignoreBOM: true });
  let from = 0;
  for (const to of [...cuts, bytes.length]) {
    const o = s.chunk(Buffer.from(bytes.subarray(from, to)));
    if (o) out.push(decoder.decode(o, { stream: true }));
    from = to;
  }
  const last = s.end();
  if (last) out.push(decoder.decode(last, { stream: true }));
  out.push(decoder.decode());
  return { text: out.join(""), usage: tracker.usage, model: tracker.model };
}

describe("sseScanner", () => {
  const bytes = enc.encode(STREAM);
  const usage = { prompt_tokens: 7, completion_tokens: 3, cached_tokens: null };

  test("wherever the upstream cuts the stream (two cuts), the same usage and the same bytes reach the client", () => {
    for (let a = 0; a <= bytes.length; a += 3) {
      for (let b = a; b <= bytes.length; b += 5) {
        const pass = scan(false, bytes, [a, b]);
        expect(pass).toEqual({ text: STREAM, usage, model: "m-1" });
        const hidden = scan(true, bytes, [a, b]);
        expect(hidden).toEqual({ text: STREAM.replace(`${usageLine}\n`, ""), usage, model: "m-1" });
      }
    }
  });

  test("a byte order mark at the start reaches the client as it came, wherever the stream is cut", () => {
    const withBom = `\ufeff${STREAM}`;
    const bomBytes = enc.encode(withBom);
    for (let a = 0; a <= 12; a++) {
      expect(scan(true, bomBytes, [a]).text).toBe(withBom.replace(`${usageLine}\n`, ""));
      expect(scan(false, bomBytes, [a]).text).toBe(withBom);
    }
  });

  test("whole events without usage pass as the very same bytes; a usage line is still read", () => {
    const tracker = new UsageTracker();
    const s = sseScanner(tracker, true);
    const event = Buffer.from('data: {"choices":[{"delta":{"content":"x"}}]}\n\n');
    expect(s.chunk(event)).toBe(event);
    expect(s.chunk(Buffer.from(`${usageLine}\n\n`))).toEqual(enc.encode("\n"));
    expect(tracker.usage).toEqual(usage);
  });

  test("a chunk after a partial line is read with it (the usage word split across chunks)", () => {
    const at = Buffer.from(bytes).indexOf('"usage"') + 3;
    expect(dec.decode(bytes.subarray(0, at)).endsWith('"us')).toBe(true);
    for (const hide of [false, true]) expect(scan(hide, bytes, [at]).usage).toEqual(usage);
  });
});

describe("jsonScanner", () => {
  test("usage from one chunk or many", () => {
    const body = enc.encode(
      JSON.stringify({ model: "m-2", usage: { prompt_tokens: 5, completion_tokens: 1 } }),
    );
    for (const cuts of [[], [1], [10, 20]]) {
      const tracker = new UsageTracker();
      const s = jsonScanner(tracker);
      let from = 0;
      for (const to of [...cuts, body.length]) {
        expect(s.chunk(body.subarray(from, to))).toEqual(body.subarray(from, to));
        from = to;
      }
      expect(s.end()).toBeNull();
      expect(tracker.usage).toEqual({ prompt_tokens: 5, completion_tokens: 1, cached_tokens: null });
      expect(tracker.model).toBe("m-2");
    }
  });
});
