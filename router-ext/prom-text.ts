// Prometheus text exposition (version 0.0.4): one writer for every /metrics
// part (store, gate, write queue, rejections, breaker), so HELP/TYPE lines,
// label escaping and non-finite values are handled the same way everywhere.

import { plainText } from "./notify/channels/text.ts";

export type MetricType = "gauge" | "counter" | "histogram";

/** Labels, value and an optional name suffix (a histogram's _bucket, _sum, _count). */
export type Sample = [labels: Record<string, string>, value: number, suffix?: string];

/**
 * A label value as the exposition format writes it: control, bidi and invisible
 * characters removed first (the alerts' plainText: free text from reporters, a
 * top target, reaches labels, and a raw CR, NUL or U+202E would forge or hide
 * what a reader sees), then backslash, double quote and line feed escaped.
 */
export function labelValue(v: string): string {
  return plainText(v).replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

/** HELP and TYPE lines, then one line per sample; a non-finite value is written as 0. */
export function metricLines(name: string, type: MetricType, help: string, samples: Sample[]): string[] {
  const lines = [`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`];
  for (const [labels, value, suffix = ""] of samples) {
    const l = Object.entries(labels)
      .map(([k, v]) => `${k}="${labelValue(v)}"`)
      .join(",");
    lines.push(`${name}${suffix}${l ? `{${l}}` : ""} ${Number.isFinite(value) ? value : 0}`);
  }
  return lines;
}

/** A metric with a single unlabelled sample. */
export function single(name: string, type: MetricType, help: string, value: number): string[] {
  return metricLines(name, type, help, [[{}, value]]);
}

/** Joins lines into a text block ending in a newline. */
export function promText(lines: string[]): string {
  return `${lines.join("\n")}\n`;
}

const SAMPLE = /^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})? (.*)$/;

/**
 * `text` with one more label on every sample line (HELP and TYPE lines as
 * they were): the replica that answered, when several serve one database.
 * @example
 * withLabel('m{a="1"} 2\nn 3\n', "replica", "r1") // 'm{replica="r1",a="1"} 2\nn{replica="r1"} 3\n'
 */
export function withLabel(text: string, name: string, value: string): string {
  const label = `${name}="${labelValue(value)}"`;
  return text
    .split("\n")
    .map((line) => {
      const m = line.startsWith("#") ? null : SAMPLE.exec(line);
      if (!m) return line;
      const inner = m[2] ? m[2].slice(1, -1) : "";
      return `${m[1]}{${label}${inner ? `,${inner}` : ""}} ${m[3]}`;
    })
    .join("\n");
}
