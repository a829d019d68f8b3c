// One request through the gate: who sent it, what its body said (model,
// stream) as it went by, the answer it got and the one record that says so.
// The gate's own answers (refusal, cap, too large, upstream down) are sent
// from here; each writes its record first, as a forwarded answer does at its end.
import type { IncomingMessage, ServerResponse } from "node:http";
import { contextCapBody, errorBody, refusalBody } from "./answers.ts";
import type { ClientKey } from "./client-keys.ts";
import { headerOf } from "./headers.ts";
import { identityFrom } from "./identity.ts";
import type { GateMetrics } from "./metrics.ts";
import { costUsd, type Prices } from "./pricing.ts";
import { BodyRewriter, isCompletionsPath } from "./request-body.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./types.ts";
import type { Usage } from "./usage.ts";

/** What an exchange needs from the gate around it. */
export interface ExchangeEnv {
  store: GateStore;
  metrics: GateMetrics;
  prices: Prices;
  now: () => number;
  log: (line: string) => void;
  modelRoute?: (model: string, identity: GateIdentity) => { model: string; header: string } | null;
  code: (err: unknown) => string;
}

/** The record's usage figures, from the upstream's answer. */
export interface Outcome {
  status: number;
  usage: Usage | null;
  /** The model the upstream named, when the request body named none. */
  upstreamModel: string | null;
  error: string | null;
  bytes: number | null;
}

export class Exchange {
  readonly identity: GateIdentity;
  /** GET and HEAD (model lists) never write: no session learnt, no record. */
  readonly reads: boolean;
  /** The path under /v1 and the query, as they go upstream. */
  readonly rest: string;
  readonly search: string;
  readonly rewriter: BodyRewriter;
  /** The breaker's choice for this request's model, set when the body names it. */
  routed: { model: string; header: string } | null = null;
  rootId: string | null = null;
  private readonly startedAt: number;

  constructor(
    private readonly env: ExchangeEnv,
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    private readonly client: ClientKey,
    readonly t0: number,
  ) {
    this.startedAt = env.now();
    this.identity = identityFrom({ get: (n) => headerOf(req.headers, n) });
    const url = req.url ?? "/v1";
    const q = url.indexOf("?");
    this.rest = (q < 0 ? url : url.slice(0, q)).replace(/^\/v1\/?/, "");
    this.search = q < 0 ? "" : url.slice(q);
    this.reads = req.method === "GET" || req.method === "HEAD";
    this.rewriter = new BodyRewriter({
      completions: isCompletionsPath(this.rest),
      onModel: (m) => this.route(m),
    });
  }

  /** The model the request asked for, or the breaker's replacement. */
  get model(): string | null {
    return this.routed?.model ?? this.rewriter.model;
  }

  decide(): GateDecision {
    const d = this.reads ? this.env.store.peek(this.identity) : this.env.store.decide(this.identity);
    this.rootId = d.rootId;
    return d;
  }

  /** Answers locally (never forwarded), recorded unless the request only reads. */
  local(status: number, body: unknown, extra: Record<string, string> = {}, refused = false): void {
    this.record({ status, usage: null, upstreamModel: null, error: null, bytes: null }, refused);
    const text = JSON.stringify(body);
    this.res.writeHead(status, {
      "content-type": "application/json",
      "content-length": String(Buffer.byteLength(text)),
      ...extra,
    });
    this.res.end(text);
  }

  refuse(d: GateDecision, refusal: { status: number; retry_after_s: number | null }): void {
    const scope = d.scope === "tree" ? "tree" : "session";
    this.env.metrics.refusal(scope);
    const { status, retry_after_s } = refusal;
    const refusalStatus = Number.isInteger(status) && status >= 400 && status <= 599 ? status : 429;
    const extra: Record<string, string> =
      retry_after_s !== null && retry_after_s >= 0 ? { "retry-after": String(Math.ceil(retry_after_s)) } : {};
    this.local(refusalStatus, refusalBody(this.identity, { ...d, scope }), extra, true);
  }

  /** Recorded as refused (it never reached the model), status 413. */
  capped(over: { cap: number; tokens: number }): void {
    this.local(413, contextCapBody(this.identity, over), {}, true);
  }

  tooLarge(maxBytes: number): void {
    const message = `stallguard gate: request body is over the ${maxBytes} byte cap (server.max_proxy_bytes)`;
    this.local(413, errorBody(message, "invalid_request_error", "request_too_large"));
  }

  /** The one record of this request (a read writes none); the spend is counted either way. */
  record(o: Outcome, refused = false): void {
    const priced = o.usage
      ? (costUsd(this.env.prices, this.model, o.usage) ?? costUsd(this.env.prices, o.upstreamModel, o.usage))
      : null;
    if (priced !== null) this.env.metrics.spend(priced);
    if (this.reads) return;
    const r: RequestRecord = {
      session_id: this.identity.sessionId,
      root_id: this.rootId,
      agent: this.identity.agent,
      parent: this.identity.parent,
      model: this.model ?? o.upstreamModel,
      status: o.status,
      prompt_tokens: o.usage?.prompt_tokens ?? null,
      completion_tokens: o.usage?.completion_tokens ?? null,
      cached_tokens: o.usage?.cached_tokens ?? null,
      cost_usd: priced,
      context_tokens: o.usage?.prompt_tokens ?? null,
      started_at: this.startedAt,
      duration_ms: performance.now() - this.t0,
      refused,
      plugin_version: this.identity.pluginVersion,
      client: this.client.name,
      error: o.error,
      response_bytes: o.bytes,
    };
    try {
      this.env.store.recordRequest(r);
    } catch (err) {
      this.env.log(`gate: store.recordRequest failed (${this.env.code(err)})`);
    }
  }

  private route(model: string): string | null {
    if (!this.env.modelRoute) return null;
    try {
      this.routed = this.env.modelRoute(model, this.identity);
    } catch (err) {
      this.env.log(`gate: modelRoute failed (${this.env.code(err)}); request left as it is`);
    }
    return this.routed?.model ?? null;
  }
}
