// The gate's routes: GET /gate/:conversation (is this session refused?) and
// the proxy on /v1/*. A refused session or tree is answered locally and never
// forwarded; everything else goes up with its usage read on the way down.
import { Hono } from "hono";
import { contextCapBody, errorBody, json, refusalBody } from "./answers.ts";
import { forwardRequestHeaders, forwardResponseHeaders, upstreamUrl } from "./headers.ts";
import { headerValue, identityFrom } from "./identity.ts";
import { createGateMetrics, type GateMetrics, type RefusalScope } from "./metrics.ts";
import { costUsd, type Prices } from "./pricing.ts";
import { type Peek, peekBody, readCapped, withModel } from "./request-body.ts";
import { jsonScanner, passScanner, sseScanner } from "./scanners.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./store.ts";
import { type Usage, UsageTracker } from "./usage.ts";

/**
 * Every field except store, metrics and fetchImpl is read per request, so the
 * server can apply a knob change (refusal shape, prices, caps, timeout,
 * upstream) by mutating the object it passed in, without a restart.
 */
export interface GateOptions {
  /** The upstream's OpenAI base URL, ending in /v1; null answers 503 (refusals still apply). */
  upstream: string | null;
  /** Replaces the client's Authorization when set; otherwise the client's is passed on. */
  apiKey: string | null;
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

  const decide = async (identity: GateIdentity): Promise<GateDecision> => {
    try {
      return await opts.store.decide(identity);
    } catch (err) {
      // Fail open: a broken store must not stop all model traffic. Counted and logged.
      metrics.storeError();
      log(`gate: store.decide failed (${errorCode(err)}); request let through`);
      return { refused: false, scope: null, reason: null, rootId: null };
    }
  };

  const record = async (r: RequestRecord): Promise<void> => {
    try {
      await opts.store.recordRequest(r);
    } catch (err) {
      log(`gate: store.recordRequest failed (${errorCode(err)})`);
    }
  };

  app.get("/gate/:conversation", async (c) => {
    const parsed = headerValue.safeParse(c.req.param("conversation"));
    if (!parsed.success) {
      return c.json(
        errorBody("conversation id must be 1-256 printable ASCII", "invalid_request_error", "bad_id"),
        400,
      );
    }
    const d = await decide({ conversation: parsed.data, agent: null, parent: null, pluginVersion: null });
    return c.json({
      conversation: parsed.data,
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
    const identity = identityFrom(req.headers);
    const url = new URL(req.url);
    const rest = url.pathname.replace(/^\/v1\/?/, "");
    let model: string | null = null;
    let rootId: string | null = null;
    const base = (): Omit<RequestRecord, "status" | "duration_ms"> => ({
      conversation: identity.conversation,
      root_id: rootId,
      agent: identity.agent,
      parent: identity.parent,
      model,
      prompt_tokens: null,
      completion_tokens: null,
      cached_tokens: null,
      cost_usd: null,
      context_tokens: null,
      started_at: startedAt,
      refused: false,
      plugin_version: identity.pluginVersion,
    });
    const local = async (
      status: number,
      body: unknown,
      extra: Record<string, string> = {},
      refused = false,
    ) => {
      await record({ ...base(), status, refused, duration_ms: performance.now() - t0 });
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
    if (Number.isFinite(declared) && declared > opts.maxBodyBytes) return tooLarge();
    let peek: Peek = { model: null, body: new Uint8Array(0), injected: false };
    if (req.method !== "GET" && req.method !== "HEAD") {
      const read = await readCapped(req, opts.maxBodyBytes).catch(() => null);
      if (read === null)
        return local(400, errorBody("could not read the request body", "invalid_request_error", "bad_body"));
      if (!read.ok) return tooLarge();
      peek = peekBody(read.bytes, req.headers.get("content-type"), rest);
      model = peek.model;
    }

    const decision = await decide(identity);
    rootId = decision.rootId;
    if (decision.refused) {
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
      // Recorded as refused (it never reached the model), status 413.
      return local(413, contextCapBody(identity, decision.overCap), {}, true);
    }

    if (!opts.upstream) {
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

    // The behaviour breaker: an open model's request goes to its fallback, said so in a header.
    let routed: { model: string; header: string } | null = null;
    if (opts.modelRoute && model !== null) {
      try {
        routed = opts.modelRoute(model, identity);
      } catch (err) {
        log(`gate: modelRoute failed (${errorCode(err)}); request left as it is`);
      }
      if (routed) {
        peek = { ...peek, body: withModel(peek.body, routed.model) };
        model = routed.model;
      }
    }

    // Forward.
    const controller = new AbortController();
    let timedOut = false;
    const onClientAbort = () => controller.abort();
    req.signal.addEventListener("abort", onClientAbort, { once: true });
    let headTimer: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, opts.timeoutMs);
    const tFetch = performance.now();
    let upstreamRes: Response;
    try {
      const init: RequestInit = {
        method: req.method,
        headers: forwardRequestHeaders(req.headers, opts.apiKey),
        signal: controller.signal,
        redirect: "manual",
      };
      if (req.method !== "GET" && req.method !== "HEAD") init.body = peek.body;
      upstreamRes = await doFetch(upstreamUrl(opts.upstream, rest, url.search), init);
    } catch (err) {
      clearTimeout(headTimer);
      req.signal.removeEventListener("abort", onClientAbort);
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
    headTimer = undefined;
    const upstreamHeadMs = performance.now() - tFetch;

    const tracker = new UsageTracker();
    const contentType = upstreamRes.headers.get("content-type") ?? "";
    const scanner = /text\/event-stream/i.test(contentType)
      ? sseScanner(tracker, peek.injected)
      : /json/i.test(contentType)
        ? jsonScanner(tracker)
        : passScanner;
    const status = upstreamRes.status;
    const headers = forwardResponseHeaders(upstreamRes.headers);
    if (routed) headers.set("x-stallguard-breaker", routed.header);

    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(idleTimer);
      req.signal.removeEventListener("abort", onClientAbort);
      const usage: Usage | null = tracker.usage;
      const priced = usage
        ? (costUsd(opts.prices, model, usage) ?? costUsd(opts.prices, tracker.model, usage))
        : null;
      if (priced !== null) metrics.spend(priced);
      void record({
        ...base(),
        model: model ?? tracker.model,
        status,
        prompt_tokens: usage?.prompt_tokens ?? null,
        completion_tokens: usage?.completion_tokens ?? null,
        cached_tokens: usage?.cached_tokens ?? null,
        cost_usd: priced,
        context_tokens: usage?.prompt_tokens ?? null,
        duration_ms: performance.now() - t0,
      });
    };

    let idleTimer: ReturnType<typeof setTimeout> | undefined;
    const armIdle = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, opts.timeoutMs);
    };

    const source = upstreamRes.body;
    if (!source || req.method === "HEAD" || status === 204 || status === 304) {
      await source?.cancel().catch(() => {});
      finish();
      metrics.observeOverhead(performance.now() - t0 - upstreamHeadMs);
      return new Response(null, { status, headers });
    }
    const reader = source.getReader();
    armIdle();
    const body = new ReadableStream<Uint8Array>({
      async pull(ctrl) {
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) {
              const tail = scanner.end();
              if (tail) ctrl.enqueue(tail);
              ctrl.close();
              finish();
              return;
            }
            armIdle();
            const out = scanner.chunk(value);
            if (out && out.byteLength > 0) {
              ctrl.enqueue(out);
              return;
            }
          }
        } catch (err) {
          metrics.upstreamError(timedOut ? "timeout" : "stream");
          log(
            `gate: upstream body ${timedOut ? `silent for ${opts.timeoutMs} ms` : `failed (${errorCode(err)})`}`,
          );
          ctrl.error(err);
          finish();
        }
      },
      cancel(reason) {
        // The client went away: stop reading upstream (the upstream sees its socket close).
        controller.abort();
        reader.cancel(reason).catch(() => {});
        finish();
      },
    });
    metrics.observeOverhead(performance.now() - t0 - upstreamHeadMs);
    return new Response(body, { status, headers });
  });

  return app;
}
