// Small helpers for the core benches: timing, medians, percentiles, printing, the default policy.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Policy, parseConfig, policyFromConfig } from "../shared/index.ts";

export function nowNs(): bigint {
  return process.hrtime.bigint();
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

export function medianOf(values: readonly number[]): number {
  const s = [...values].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Per-item nanoseconds of `fn(item)` over `items`, sorted ascending. */
export function timeEach<T>(items: readonly T[], fn: (item: T) => unknown): number[] {
  const out = new Array<number>(items.length);
  let sink = 0;
  for (let i = 0; i < items.length; i++) {
    const t0 = process.hrtime.bigint();
    const r = fn(items[i] as T);
    out[i] = Number(process.hrtime.bigint() - t0);
    if (r) sink++;
  }
  if (sink < 0) console.log(sink);
  return out.sort((a, b) => a - b);
}

/** Wall milliseconds of one call. */
export function timeMs(fn: () => unknown): number {
  const t0 = process.hrtime.bigint();
  fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

export async function timeMsAsync(fn: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

/** What `loopDelay` measured: fn's wall time, and its thread's event loop lateness (the longest gap, the 99th percentile). */
export interface LoopDelay {
  ms: number;
  max: number;
  p99: number;
}

/**
 * How late this thread's event loop ran while `fn` ran: a 1 ms timer's gaps,
 * the longest and the 99th percentile less the 1 ms asked for, in ms (what a
 * request arriving meanwhile waited), with fn's wall time.
 */
export async function loopDelay(fn: () => Promise<unknown>): Promise<LoopDelay> {
  const gaps: number[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const t = performance.now();
    gaps.push(t - last - 1);
    last = t;
  }, 1);
  const ms = await timeMsAsync(fn);
  clearInterval(timer);
  gaps.push(performance.now() - last - 1);
  gaps.sort((a, b) => a - b);
  return { ms, max: gaps.at(-1) ?? 0, p99: percentile(gaps, 99) };
}

export function fmt(n: number, digits = 2): string {
  if (!Number.isFinite(n)) return String(n);
  return n >= 1000 ? Math.round(n).toLocaleString("en-US") : n.toFixed(digits);
}

/** Prints rows as an aligned table (first column left, the rest right). */
export function printTable(head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number)))
      .join("  ");
  console.log(line(head));
  for (const r of rows) console.log(line(r));
}

/** Forces a full GC when node runs with --expose-gc (the benches enable it themselves). */
export function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) {
    g();
    g();
  }
}

export function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : fallback;
}

/** The judge's policy from the repo's config/config.yaml alone (benches measure the defaults). */
export function defaultPolicy(): Policy {
  const root = join(import.meta.dirname, "..");
  const cfg = parseConfig([
    { source: "config.yaml", text: readFileSync(join(root, "config", "config.yaml"), "utf8") },
  ]);
  if (!cfg.ok) throw new Error("config/config.yaml does not parse");
  return policyFromConfig(cfg.config);
}
