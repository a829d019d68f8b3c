// The gate's routes: GET /gate/:session (is this session refused?) and
// the proxy on /v1/*. Only a request presenting a client key gets further; a
// refused session or tree is answered locally and never forwarded; everything
// else goes up (its body streamed, not held) with its usage read on the way down.
import { type Context, Hono } from "hono";
import { idSchema } from "../../shared/wire.ts";
import { contextCapBody, errorBody, json, refusalBody } from "./answers.ts";
import { type ClientKey, clientKeyOf, unauthorizedBody } from "./client-keys.ts";
import { forwardRequestHeaders, forwardResponseHeaders, upstreamUrl } from "./headers.ts";
import { identityFrom } from "./identity.ts";
import { createGateMetrics, type GateMetrics, type RefusalScope } from "./metrics.ts";
import { type Outgoing, outgoingBody } from "./outgoing-body.ts";
import { costUsd, type Prices } from "./pricing.ts";
import { relayBody } from "./relay.ts";
import { BodyRewriter, isCompletionsPath } from "./request-body.ts";
import { jsonScanner, passScanner, sseScanner } from "./scanners.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./store.ts";
import { type Usage, UsageTracker } from "./usage.ts";

/** A body up to this size is read whole before it goes up (with its length); a larger one streams. */
export const BUFFER_BYTES = 1024 * 1024;

/**
 * Every field except store, metrics and fetchImpl is read per request, so the
 * server can apply a knob change (refusal shape, prices, caps, timeout,
 * upstream) by mutating the object it passed in, without a restart.
 */
export interface GateOptions {
  /** The upstream's OpenAI base URL, ending in /v1; null answers 503 (refusals still apply). */
  upstream: string | null;
  /** The upstream's key, added after the client key was checked; the client's Authorization never goes up. */
  apiKey: string | null;
  /** The keys a client may present (Bearer); none configured means every /v1 request is refused. */
  clientKeys: readonly ClientKey[];
  /** What the 401 tells the user to set (where the key is and how opencode.json reads it). */
  clientKeyHint?: string;
  /**
   * The request body as a stream read only as fast as it is pulled (the node
   * server's, router-ext/server/incoming-body.ts); default the Request's body.
   */
  requestBody?: (c: Context) => ReadableStream<Uint8Array> | null;
  /** The fetch for a body that streams (router-ext/server/stream-fetch.ts); default fetchImpl. */
  streamFetch?: typeof fetch;
  prices: Prices;
  refusal: { status: number; retry_after_s: number | null };
  maxBodyBytes: number;
  /** Wait for the upstream's response head, and the longest silence inside a streamed body. */
  timeoutMs: number;
  store: GateStore;
  metrics?: GateMetrics;
  fetchImpl?: typeof fetch;
  /** One line per notable event (upstream down, store failure); never a body. */
  log?: (line: string) => void;
  /** The clock for request records. Default Date.now. */
  now?: () => number;
  /**
   * The behaviour breaker (sync): a different model for this request and the
   * response header saying so, or null to leave the request as it is.
   */
  modelRoute?: (model: string, identity: GateIdentity) => { model: string; header: string } | null;
}

function errorCode(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown } })?.cause;
  const code = typeof cause?.code === "string" ? cause.code : (err as { name?: unknown })?.name;
  return typeof code === "string" && /^[A-Za-z_]{1,40}$/.test(code) ? code : "error";
}

export function gateRoutes(opts: GateOptions): Hono {
  const app = new Hono();
  const metrics = opts.metrics ?? createGateMetrics();
  const doFetch = opts.fetchImpl ?? fetch;
  const log = opts.log ?? (() => {});

  // Fail open: a broken store must not stop all model traffic. Counted and logged.
  const ask = async (question: "decide" | "peek", identity: GateIdentity): Promise<GateDecision> => {
    try {
      return await opts.store[question](identity);
    } catch (err) {
      metrics.storeError();
      log(`gate: store.${question} failed (${errorCode(err)}); request let through`);
      return { refused: false, scope: null, reason: null, rootId: null };
    }
  };
  const decide = (identity: GateIdentity) => ask("decide", identity);
  const peek = (identity: GateIdentity) => ask("peek", identity);

  const record = async (r: RequestRecord): Promise<void> => {
    try {
      await opts.store.recordRequest(r);
    } catch (err) {
      log(`gate: store.recordRequest failed (${errorCode(err)})`);
    }
  };

  // Whether a bearer token is one of the gate's client keys, and whose (doctor
  // checks opencode.json's apiKey with it). Reads and writes nothing else.
  app.get("/gate", (c) => {
    const authorization = c.req.header("authorization");
    const client = clientKeyOf(authorization, opts.clientKeys);
    if (client !== null) return c.json({ client: client.name });
    metrics.unauthorized();
    const hint = opts.clientKeyHint ?? "a key from server.client_keys";
    return json(401, unauthorizedBody(authorization !== undefined, hint));
  });

  // Read only: an <img> pointing here must not create a session row.
  app.get("/gate/:session", async (c) => {
    const parsed = idSchema.safeParse(c.req.param("session"));
    if (!parsed.success) {
      return c.json(
        errorBody(
          "session id must be 1-200 of A-Z a-z 0-9 _ . : - (opencode's id charset)",
          "invalid_request_error",
          "bad_id",
        ),
        400,
      );
    }
    const d = await peek({ sessionId: parsed.data, agent: null, parent: null, pluginVersion: null });
    return c.json({
      session_id: parsed.data,
      refused: d.refused,
      scope: d.refused ? d.scope : null,
      reason: d.refused ? d.reason : null,
      root_id: d.rootId,
    });
  });

  app.all("/v1/*", async (c) => {
    const t0 = performance.now();
    const startedAt = (opts.now ?? Date.now)();
    metrics.request();
    const req = c.req.raw;
    let stream: ReadableStream<Uint8Array> | null | undefined;
    const requestBody = () => {
      if (stream === undefined) stream = opts.requestBody?.(c) ?? req.body;
      return stream;
    };
    /** Drops a body the gate will not forward (without holding it). */
    const discard = () =>
      requestBody()
        ?.cancel()
        .catch(() => {});
    const client = clientKeyOf(req.headers.get("authorization"), opts.clientKeys);
    if (client === null) {
      // Before anything else: no body read, nothing stored, the upstream key never used.
      metrics.unauthorized();
      await discard();
      const hint = opts.clientKeyHint ?? "a key from server.client_keys";
      return json(401, unauthorizedBody(req.headers.has("authorization"), hint));
    }
    const identity = identityFrom(req.headers);
    const url = new URL(req.url);
    const rest = url.pathname.replace(/^\/v1\/?/, "");
    // GET and HEAD (model lists) never write: no session learnt, no record.
    const reads = req.method === "GET" || req.method === "HEAD";
    let rootId: string | null = null;
    // The breaker's choice for this request's model, set when the body names it.
    const routed: { now: { model: string; header: string } | null } = { now: null };
    const rewriter = new BodyRewriter({
      completions: isCompletionsPath(rest),
      onModel: (m) => {
        if (!opts.modelRoute) return null;
        try {
          routed.now = opts.modelRoute(m, identity);
        } catch (err) {
          log(`gate: modelRoute failed (${errorCode(err)}); request left as it is`);
        }
        return routed.now?.model ?? null;
      },
    });
    const model = () => routed.now?.model ?? rewriter.model;
    const base = (): Omit<RequestRecord, "status" | "duration_ms"> => ({
      session_id: identity.sessionId,
      root_id: rootId,
      agent: identity.agent,
      parent: identity.parent,
      model: model(),
      prompt_tokens: null,
      completion_tokens: null,
      cached_tokens: null,
      cost_usd: null,
      context_tokens: null,
      started_at: startedAt,
      refused: false,
      plugin_version: identity.pluginVersion,
      client: client.name,
      error: null,
      response_bytes: null,
    });
    const local = async (
      status: number,
      body: unknown,
      extra: Record<string, string> = {},
      refused = false,
    ) => {
      if (!reads) await record({ ...base(), status, refused, duration_ms: performance.now() - t0 });
      return json(status, body, extra);
    };

    const tooLarge = () =>
      local(
        413,
        errorBody(
          `stallguard gate: request body is over the ${opts.maxBodyBytes} byte cap (server.max_proxy_bytes)`,
          "invalid_request_error",
          "request_too_large",
        ),
      );
    const declared = Number(req.headers.get("content-length") ?? "");
    if (Number.isFinite(declared) && declared > opts.maxBodyBytes) {
      await discard();
      return tooLarge();
    }
    let outgoing: Outgoing = { kind: "complete", bytes: new Uint8Array(0) };
    if (!reads) {
      outgoing = await outgoingBody(requestBody(), rewriter, {
        bufferBytes: Math.min(BUFFER_BYTES, opts.maxBodyBytes + 1),
        maxBytes: opts.maxBodyBytes,
      });
      if (outgoing.kind === "unreadable")
        return local(400, errorBody("could not read the request body", "invalid_request_error", "bad_body"));
      if (outgoing.kind === "too_large") return tooLarge();
    }
    const cancelBody = () =>
      outgoing.kind === "stream" ? outgoing.stream.cancel().catch(() => {}) : undefined;

    const decision = reads ? await peek(identity) : await decide(identity);
    rootId = decision.rootId;
    if (decision.refused) {
      await cancelBody();
      const scope: RefusalScope = decision.scope === "tree" ? "tree" : "session";
      metrics.refusal(scope);
      const { status, retry_after_s } = opts.refusal;
      const refusalStatus = Number.isInteger(status) && status >= 400 && status <= 599 ? status : 429;
      const extra: Record<string, string> =
        retry_after_s !== null && retry_after_s >= 0
          ? { "retry-after": String(Math.ceil(retry_after_s)) }
          : {};
      return local(refusalStatus, refusalBody(identity, { ...decision, scope }), extra, true);
    }
    if (decision.overCap) {
      await cancelBody();
      // Recorded as refused (it never reached the model), status 413.
      return local(413, contextCapBody(identity, decision.overCap), {}, true);
    }

    if (!opts.upstream) {
      await cancelBody();
      metrics.upstreamError("no_upstream");
      return local(
        503,
        errorBody(
          "stallguard gate: no upstream configured (server.upstream)",
          "upstream_error",
          "no_upstream",
        ),
      );
    }

    // Forward.
    const controller = new AbortController();
    let timedOut = false;
    const onClientAbort = () => controller.abort();
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    const headTimer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, opts.timeoutMs);
    const tFetch = performance.now();
    let upstreamRes: Response;
    try {
      const init: RequestInit & { duplex?: "half" } = {
        method: req.method,
        headers: forwardRequestHeaders(req.headers, opts.apiKey),
        signal: controller.signal,
        redirect: "manual",
      };
      if (outgoing.kind === "complete" && !reads) init.body = outgoing.bytes;
      if (outgoing.kind === "stream") {
        init.body = outgoing.stream;
        init.duplex = "half";
      }
      const send = outgoing.kind === "stream" ? (opts.streamFetch ?? doFetch) : doFetch;
      upstreamRes = await send(upstreamUrl(opts.upstream, rest, url.search), init);
    } catch (err) {
      clearTimeout(headTimer);
      req.signal.removeEventListener("abort", onClientAbort);
      if (outgoing.kind === "stream" && outgoing.overCap()) return tooLarge();
      if (timedOut) {
        metrics.upstreamError("timeout");
        log(`gate: upstream timed out after ${opts.timeoutMs} ms`);
        return local(
          504,
          errorBody(
            `stallguard gate: upstream did not answer within ${opts.timeoutMs} ms`,
            "upstream_error",
            "upstream_timeout",
          ),
        );
      }
      metrics.upstreamError("unreachable");
      const code = errorCode(err);
      log(`gate: upstream unreachable (${code})`);
      return local(
        502,
        errorBody(
          `stallguard gate: upstream unreachable (${code})`,
          "upstream_error",
          "upstream_unreachable",
        ),
      );
    }
    clearTimeout(headTimer);
    const upstreamHeadMs = performance.now() - tFetch;

    const tracker = new UsageTracker();
    const contentType = upstreamRes.headers.get("content-type") ?? "";
    const scanner = /text\/event-stream/i.test(contentType)
      ? sseScanner(tracker, rewriter.injected)
      : /json/i.test(contentType)
        ? jsonScanner(tracker)
        : passScanner;
    const status = upstreamRes.status;
    const headers = forwardResponseHeaders(upstreamRes.headers);
    if (routed.now) headers.set("x-stallguard-breaker", routed.now.header);

    const finish = (error: string | null, bytes: number | null) => {
      req.signal.removeEventListener("abort", onClientAbort);
      const usage: Usage | null = tracker.usage;
      const priced = usage
        ? (costUsd(opts.prices, model(), usage) ?? costUsd(opts.prices, tracker.model, usage))
        : null;
      if (priced !== null) metrics.spend(priced);
      if (reads) return;
      void record({
        ...base(),
        model: model() ?? tracker.model,
        status,
        prompt_tokens: usage?.prompt_tokens ?? null,
        completion_tokens: usage?.completion_tokens ?? null,
        cached_tokens: usage?.cached_tokens ?? null,
        cost_usd: priced,
        context_tokens: usage?.prompt_tokens ?? null,
        duration_ms: performance.now() - t0,
        error,
        response_bytes: bytes,
      });
    };

    const source = upstreamRes.body;
    if (!source || req.method === "HEAD" || status === 204 || status === 304) {
      await source?.cancel().catch(() => {});
      finish(null, 0);
      metrics.observeOverhead(performance.now() - t0 - upstreamHeadMs);
      return new Response(null, { status, headers });
    }
    const body = relayBody(source, scanner, {
      idleMs: opts.timeoutMs,
      abortUpstream: () => controller.abort(),
      code: errorCode,
      onEnd: (end) => {
        if (end.error === "upstream_stream" || end.error === "idle_timeout") {
          metrics.upstreamError(end.error === "idle_timeout" ? "timeout" : "stream");
          log(
            `gate: upstream body ${end.error === "idle_timeout" ? `silent for ${opts.timeoutMs} ms` : `failed (${end.code})`} after ${end.bytes} bytes`,
          );
        }
        finish(end.error, end.bytes);
      },
    });
    metrics.observeOverhead(performance.now() - t0 - upstreamHeadMs);
    return new Response(body, { status, headers });
  });

  return app;
}
