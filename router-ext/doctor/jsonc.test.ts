import { describe, expect, it } from "vitest";
import { parseJsonc } from "./jsonc.ts";

describe("parseJsonc", () => {
  it("reads comments and trailing commas, and leaves strings alone", () => {
    const text = `{
  // a comment
  "provider": { "sg": { "options": { "baseURL": "http://127.0.0.1:4870/v1", /* inline */ "apiKey": "a,}//b", }, }, },
  "list": [1, 2, ],
  "quote": "say \\"hi\\" // not a comment",
}`;
    expect(parseJsonc(text)).toEqual({
      provider: { sg: { options: { baseURL: "http://127.0.0.1:4870/v1", apiKey: "a,}//b" } } },
      list: [1, 2],
      quote: 'say "hi" // not a comment',
    });
  });

  it("plain JSON is unchanged; broken JSON still throws", () => {
    expect(parseJsonc('{"a": [1, {"b": null}]}')).toEqual({ a: [1, { b: null }] });
    expect(() => parseJsonc('{"a": }')).toThrow(SyntaxError);
  });
});
