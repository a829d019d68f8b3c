// The one Prometheus text writer: free text from reporters reaches label values
// (a top target), so what a scraper or a human reading /metrics sees must be
// exactly one line per sample, with nothing hidden or reordered.
import { describe, expect, it } from "vitest";
import { labelValue, metricLines, promText, withLabel } from "./prom-text.ts";

describe("label values", () => {
  it("escapes backslash, double quote and line feed as the exposition format says", () => {
    expect(labelValue('a\\b"c\nd')).toBe('a\\\\b\\"c\\nd');
  });

  it("removes CR, NUL and other controls, bidi controls, zero-width and line separators", () => {
    const forged = "read\r\u0000 a.ts\u001b[2J\u007f\u0085\u202egnp.exe\u2066x\u2069\u200b\u2028\ufeff\u061c";
    expect(labelValue(forged)).toBe("read a.ts[2Jgnp.exex");
  });

  it("keeps ordinary text and non-ASCII letters as they are", () => {
    expect(labelValue("grep -n 'TODO' src/caf\u00e9.ts")).toBe("grep -n 'TODO' src/caf\u00e9.ts");
  });

  it("a sample with hostile labels is still one line, its value last", () => {
    const lines = metricLines("m", "gauge", "h", [[{ top_target: 'x"} 9\r\nm{a="b' }, 1]]);
    expect(lines.slice(2)).toEqual(['m{top_target="x\\"} 9\\nm{a=\\"b"} 1']);
  });
});

describe("withLabel: which replica answered", () => {
  it("adds the label first on every sample and leaves HELP and TYPE lines alone", () => {
    const text = promText([
      ...metricLines("a_total", "counter", "help {x} 1", [
        [{}, 1],
        [{ outcome: "refused" }, 2],
      ]),
      ...metricLines("h", "histogram", "h", [[{ le: "+Inf" }, 3, "_bucket"]]),
    ]);
    expect(withLabel(text, "replica", 'r"1')).toBe(
      [
        "# HELP a_total help {x} 1",
        "# TYPE a_total counter",
        'a_total{replica="r\\"1"} 1',
        'a_total{replica="r\\"1",outcome="refused"} 2',
        "# HELP h h",
        "# TYPE h histogram",
        'h_bucket{replica="r\\"1",le="+Inf"} 3',
        "",
      ].join("\n"),
    );
  });
});
