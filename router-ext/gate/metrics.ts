/**
 * The gate's Prometheus counters. render() gives text exposition format
 * (HELP/TYPE lines), which the server appends to its /metrics answer.
 */
import { metricLines, promText, type Sample, single } from "../prom-text.ts";

export type RefusalScope = "session" | "tree";
export type UpstreamErrorKind = "unreachable" | "timeout" | "stream" | "no_upstream";
export type DegradedDecision = "refused" | "passed";

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
  degraded(decision: DegradedDecision): void;
  /** Milliseconds the gate added before the client got its response head. */
  observeOverhead(ms: number): void;
  /** Spend seen in usage (dollars), per request with a known price. */
  spend(usd: number): void;
  render(): string;
}

/** Histogram buckets in seconds: the gate should add well under a millisecond. */
export const OVERHEAD_BUCKETS_S = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1];

/** What the gate has counted since the server started. */
interface GateCounts {
  requests: number;
  unauthorized: number;
  storeErrors: number;
  degraded: Record<DegradedDecision, number>;
  spendUsd: number;
  refusals: Record<RefusalScope, number>;
  upstream: Record<UpstreamErrorKind, number>;
  /** Overhead histogram: per-bucket counts, count and sum in seconds. */
  buckets: number[];
  count: number;
  sum: number;
}

export function createGateMetrics(): GateMetrics {
  const c: GateCounts = {
    requests: 0,
    unauthorized: 0,
    storeErrors: 0,
    degraded: { refused: 0, passed: 0 },
    spendUsd: 0,
    refusals: { session: 0, tree: 0 },
    upstream: { unreachable: 0, timeout: 0, stream: 0, no_upstream: 0 },
    buckets: OVERHEAD_BUCKETS_S.map(() => 0),
    count: 0,
    sum: 0,
  };
  return {
    request: () => {
      c.requests++;
    },
    unauthorized: () => {
      c.unauthorized++;
    },
    refusal: (scope) => {
      c.refusals[scope]++;
    },
    upstreamError: (kind) => {
      c.upstream[kind]++;
    },
    storeError: () => {
      c.storeErrors++;
    },
    degraded: (outcome) => {
      c.degraded[outcome]++;
    },
    observeOverhead: (ms) => {
      if (!Number.isFinite(ms)) return;
      const s = Math.max(0, ms) / 1000;
      c.count++;
      c.sum += s;
      for (let i = 0; i < OVERHEAD_BUCKETS_S.length; i++)
        if (s <= (OVERHEAD_BUCKETS_S[i] as number)) c.buckets[i] = (c.buckets[i] ?? 0) + 1;
    },
    spend: (usd) => {
      if (Number.isFinite(usd) && usd > 0) c.spendUsd += usd;
    },
    render: () => renderGateMetrics(c),
  };
}

/** The counts as Prometheus text (HELP/TYPE lines). */
function renderGateMetrics(c: GateCounts): string {
  return promText([
    ...single(
      "stallguard_gate_requests_total",
      "counter",
      "Requests received by the gate on /v1/*.",
      c.requests,
    ),
    ...single(
      "stallguard_gate_unauthorized_total",
      "counter",
      "Requests refused for a missing or unknown client key (401).",
      c.unauthorized,
    ),
    ...metricLines(
      "stallguard_gate_refusals_total",
      "counter",
      "Requests the gate refused, by refusal scope.",
      (Object.keys(c.refusals) as RefusalScope[]).map((k) => [{ scope: k }, c.refusals[k]]),
    ),
    ...metricLines(
      "stallguard_gate_upstream_errors_total",
      "counter",
      "Upstream failures seen by the gate, by kind.",
      (Object.keys(c.upstream) as UpstreamErrorKind[]).map((k) => [{ kind: k }, c.upstream[k]]),
    ),
    ...single(
      "stallguard_gate_store_errors_total",
      "counter",
      "Store failures on decide (the request was let through).",
      c.storeErrors,
    ),
    ...metricLines(
      "stallguard_gate_degraded_decisions_total",
      "counter",
      "Decisions made from memory while the store cannot write: refused (a known refusal) or passed.",
      (Object.keys(c.degraded) as DegradedDecision[]).map((k) => [{ outcome: k }, c.degraded[k]]),
    ),
    ...single(
      "stallguard_gate_spend_usd_total",
      "counter",
      "Dollars of model spend seen in upstream usage (priced models only).",
      c.spendUsd,
    ),
    ...metricLines(
      "stallguard_gate_overhead_seconds",
      "histogram",
      "Time the gate adds before the response head (total minus upstream).",
      [
        ...OVERHEAD_BUCKETS_S.map((b, i): Sample => [{ le: String(b) }, c.buckets[i] ?? 0, "_bucket"]),
        [{ le: "+Inf" }, c.count, "_bucket"],
        [{}, c.sum, "_sum"],
        [{}, c.count, "_count"],
      ],
    ),
  ]);
}
