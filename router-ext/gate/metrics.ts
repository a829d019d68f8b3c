/**
 * The gate's Prometheus counters. render() gives text exposition format
 * (HELP/TYPE lines), which the server appends to its /metrics answer.
 */
import { metricLines, promText, type Sample, single } from "../prom-text.ts";

export type RefusalScope = "session" | "tree";
export type UpstreamErrorKind = "unreachable" | "timeout" | "stream" | "no_upstream";
export type DegradedOutcome = "refused" | "passed";

export interface GateMetrics {
  /** A request reached /v1/*. */
  request(): void;
  /** A request presented no client key or an unknown one (401; nothing else happened). */
  unauthorized(): void;
  refusal(scope: RefusalScope): void;
  upstreamError(kind: UpstreamErrorKind): void;
  /** The store failed to answer decide(); the request was let through. */
  storeError(): void;
  /** The store answered from memory while it cannot write: a known refusal refused, anything else passed. */
  degraded(outcome: DegradedOutcome): void;
  /** Milliseconds the gate added before the client got its response head. */
  observeOverhead(ms: number): void;
  /** Spend seen in usage (dollars), per request with a known price. */
  spend(usd: number): void;
  render(): string;
}

/** Histogram buckets in seconds: the gate should add well under a millisecond. */
export const OVERHEAD_BUCKETS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];

export function createGateMetrics(): GateMetrics {
  let requests = 0;
  let unauthorized = 0;
  let storeErrors = 0;
  const degraded: Record<DegradedOutcome, number> = { refused: 0, passed: 0 };
  let spendUsd = 0;
  const refusals: Record<RefusalScope, number> = { session: 0, tree: 0 };
  const upstream: Record<UpstreamErrorKind, number> = {
    unreachable: 0,
    timeout: 0,
    stream: 0,
    no_upstream: 0,
  };
  const buckets = OVERHEAD_BUCKETS_S.map(() => 0);
  let count = 0;
  let sum = 0;

  return {
    request: () => {
      requests++;
    },
    unauthorized: () => {
      unauthorized++;
    },
    refusal: (scope) => {
      refusals[scope]++;
    },
    upstreamError: (kind) => {
      upstream[kind]++;
    },
    storeError: () => {
      storeErrors++;
    },
    degraded: (outcome) => {
      degraded[outcome]++;
    },
    observeOverhead: (ms) => {
      if (!Number.isFinite(ms)) return;
      const s = Math.max(0, ms) / 1000;
      count++;
      sum += s;
      OVERHEAD_BUCKETS_S.forEach((b, i) => {
        if (s <= b) buckets[i] = (buckets[i] ?? 0) + 1;
      });
    },
    spend: (usd) => {
      if (Number.isFinite(usd) && usd > 0) spendUsd += usd;
    },
    render: () =>
      promText([
        ...single(
          "stallguard_gate_requests_total",
          "counter",
          "Requests received by the gate on /v1/*.",
          requests,
        ),
        ...single(
          "stallguard_gate_unauthorized_total",
          "counter",
          "Requests refused for a missing or unknown client key (401).",
          unauthorized,
        ),
        ...metricLines(
          "stallguard_gate_refusals_total",
          "counter",
          "Requests the gate refused, by refusal scope.",
          (Object.keys(refusals) as RefusalScope[]).map((k) => [{ scope: k }, refusals[k]]),
        ),
        ...metricLines(
          "stallguard_gate_upstream_errors_total",
          "counter",
          "Upstream failures seen by the gate, by kind.",
          (Object.keys(upstream) as UpstreamErrorKind[]).map((k) => [{ kind: k }, upstream[k]]),
        ),
        ...single(
          "stallguard_gate_store_errors_total",
          "counter",
          "Store failures on decide (the request was let through).",
          storeErrors,
        ),
        ...metricLines(
          "stallguard_gate_degraded_decisions_total",
          "counter",
          "Decisions made from memory while the store cannot write: refused (a known refusal) or passed.",
          (Object.keys(degraded) as DegradedOutcome[]).map((k) => [{ outcome: k }, degraded[k]]),
        ),
        ...single(
          "stallguard_gate_spend_usd_total",
          "counter",
          "Dollars of model spend seen in upstream usage (priced models only).",
          spendUsd,
        ),
        ...metricLines(
          "stallguard_gate_overhead_seconds",
          "histogram",
          "Time the gate adds before the response head (total minus upstream).",
          [
            ...OVERHEAD_BUCKETS_S.map((b, i): Sample => [{ le: String(b) }, buckets[i] ?? 0, "_bucket"]),
            [{ le: "+Inf" }, count, "_bucket"],
            [{}, sum, "_sum"],
            [{}, count, "_count"],
          ],
        ),
      ]),
  };
}
