import { describe, expect, test } from "vitest";
import { costUsd, priceFor } from "./pricing.ts";
import { isUsageOnlyChunk, LineSplitter, usageFrom, usageLinePayload } from "./usage.ts";

function splitAll(pieces: string[], max?: number) {
  const s = new LineSplitter(max);
  const out = pieces.flatMap((p) => s.push(p));
  const tail = s.flush();
  return tail ? [...out, tail] : out;
}

describe("LineSplitter", () => {
  test("reassembles lines split across chunks, keeps terminators, and rebuilds the input exactly", () => {
    const input = 'data: {"a":1}\r\n\r\ndata: {"b"\n:2}\rlast';
    for (let cut = 1; cut < input.length; cut++) {
      const lines = splitAll([input.slice(0, cut), input.slice(cut)]);
      expect(lines.map((l) => l.text + l.eol).join("")).toBe(input);
      expect(lines.filter((l) => l.parseable && l.text.startsWith("data:")).map((l) => l.text)).toContain(
        'data: {"a":1}',
      );
    }
  });

  test("an overlong line is passed on in pieces, never parsed, memory stays bounded", () => {
    const long = `data: {"usage":{"prompt_tokens":1},"x":"${"y".repeat(100)}"}`;
    const lines = splitAll([long.slice(0, 60), long.slice(60), "\ndata: ok\n"], 50);
    expect(lines.map((l) => l.text + l.eol).join("")).toBe(`${long}\ndata: ok\n`);
    const parseable = lines.filter((l) => l.parseable).map((l) => l.text);
    expect(parseable).toEqual(["data: ok"]);
  });
});

describe("usage parsing", () => {
  test("OpenAI, DeepSeek and cache_read shapes", () => {
    expect(
      usageFrom({
        usage: { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 4 } },
      }),
    ).toEqual({
      prompt_tokens: 10,
      completion_tokens: 2,
      cached_tokens: 4,
    });
    expect(
      usageFrom({ usage: { prompt_tokens: 10, completion_tokens: 2, prompt_cache_hit_tokens: 3 } })
        ?.cached_tokens,
    ).toBe(3);
    expect(usageFrom({ usage: { prompt_tokens: 10, completion_tokens: 2 } })?.cached_tokens).toBeNull();
    expect(usageFrom({ usage: null })).toBeNull();
    expect(usageFrom({ usage: { prompt_tokens: "10" } })).toBeNull();
    expect(usageFrom("nope")).toBeNull();
  });

  test("only data lines mentioning usage are parsed; usage-only chunks are told apart", () => {
    expect(usageLinePayload('data: {"choices":[{"delta":{"content":"x"}}]}')).toBeUndefined();
    expect(usageLinePayload("data: [DONE]")).toBeUndefined();
    expect(usageLinePayload('event: x "usage"')).toBeUndefined();
    expect(usageLinePayload('data: {"usage": broken')).toBeUndefined();
    const p = usageLinePayload('data: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}');
    expect(isUsageOnlyChunk(p)).toBe(true);
    expect(isUsageOnlyChunk({ choices: [{}], usage: { prompt_tokens: 1 } })).toBe(false);
  });
});

describe("pricing", () => {
  const prices = {
    "claude-x": { prompt: 3, completion: 15, cached: 0.3 },
    "gpt-y": { prompt: 1, completion: 2 },
  };
  test("exact name first, then without provider prefixes", () => {
    expect(priceFor(prices, "openrouter/anthropic/claude-x")).toBe(prices["claude-x"]);
    expect(priceFor(prices, "claude-x")).toBe(prices["claude-x"]);
    expect(priceFor(prices, "unknown/model")).toBeNull();
    expect(priceFor(prices, null)).toBeNull();
    expect(priceFor(prices, "__proto__")).toBeNull();
  });
  test("dollars per million tokens, cached at the cached price or else the prompt price", () => {
    expect(
      costUsd(prices, "claude-x", { prompt_tokens: 1_000_000, completion_tokens: 0, cached_tokens: 500_000 }),
    ).toBeCloseTo(1.65, 10);
    expect(
      costUsd(prices, "gpt-y", {
        prompt_tokens: 1_000_000,
        completion_tokens: 1_000_000,
        cached_tokens: 900_000,
      }),
    ).toBeCloseTo(3, 10);
    // More cached than prompt (bad upstream numbers) never goes negative.
    expect(
      costUsd(prices, "claude-x", { prompt_tokens: 10, completion_tokens: 0, cached_tokens: 99 }),
    ).toBeCloseTo(3e-6, 12);
    expect(
      costUsd(prices, "none", { prompt_tokens: 1, completion_tokens: 1, cached_tokens: null }),
    ).toBeNull();
  });
});
