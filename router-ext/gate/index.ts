/**
 * The gate: an OpenAI-compatible reverse proxy in front of the model endpoint.
 *
 * - `/v1/<rest>` goes to `<upstream>/<rest>` (the upstream base ends in /v1).
 * - A refused conversation (or tree) is answered locally and never forwarded.
 * - Streaming answers pass through chunk by chunk; a line scanner reads only
 *   the usage chunk. Non-streaming JSON is scanned once for its usage. No
 *   request or response body is stored or logged: only counts, money, timings.
 * - Where a streaming request did not ask for usage, the gate asks for it
 *   (stream_options.include_usage) and removes the extra usage-only chunk from
 *   what the client sees, so the client gets exactly the stream it asked for.
 */
import { Hono } from "hono";
import { z } from "zod";
import { createGateMetrics, type GateMetrics, type RefusalScope, type UpstreamErrorKind } from "./metrics.ts";
import { costUsd, type Prices } from "./pricing.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./store.ts";
import { isUsageOnlyChunk, LineSplitter, type Usage, UsageTracker, usageLinePayload } from "./usage.ts";

export { createGateMetrics, type GateMetrics } from "./metrics.ts";
export { costUsd, priceFor } from "./pricing.ts";
export type { GateDecision, GateIdentity, GateStore, RequestRecord } from "./store.ts";

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

/** Largest non-streaming JSON answer scanned for usage; bigger ones pass through unscanned. */
export const MAX_SCAN_BYTES = 8 * 1024 * 1024;

// Headers that belong to one hop and must not be forwarded (RFC 9110 7.6.1).
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "trailers",
  "transfer-encoding",
  "upgrade",
]);
// Recomputed or owned by this hop.
const DROP_REQUEST = new Set(["host", "content-length", "accept-encoding", "expect"]);
const DROP_RESPONSE = new Set(["content-length", "content-encoding"]);

/** An identity header: printable ASCII without spaces, bounded. Anything else counts as absent. */
const headerValue = z
  .string()
  .min(1)
  .max(256)
  .regex(/^[\x21-\x7e]+$/);

// Only the fields the gate reads; the rest of the (client's) body is forwarded untouched,
// so this is deliberately not strict.
const bodyPeek = z.looseObject({
  model: z.string().max(256).optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});

function header(headers: Headers, ...names: string[]): string | null {
  for (const name of names) {
    const v = headers.get(name);
    if (v === null) continue;
    const ok = headerValue.safeParse(v.trim());
    if (ok.success) return ok.data;
  }
  return null;
}

/** Identity from the request headers: ours first, then opencode's own. */
export function identityFrom(headers: Headers): GateIdentity {
  return {
    conversation: header(headers, "x-router-conversation", "x-session-id"),
    agent: header(headers, "x-router-agent"),
    parent: header(headers, "x-router-parent", "x-parent-session-id"),
    pluginVersion: header(headers, "x-stallguard-plugin"),
  };
}

type ErrorBody = { error: { message: string; type: string; code: string } };

function errorBody(message: string, type: string, code: string): ErrorBody {
  return { error: { message, type, code } };
}

/**
 * The refusal's OpenAI-shaped body. The message names the session and how to
 * resume, and stays clear of the words opencode's retry matcher looks for
 * ("rate limit", "try again", "unavailable", ...), so the status alone decides
 * whether opencode retries.
 */
export function refusalBody(identity: GateIdentity, decision: GateDecision): ErrorBody {
  const who = identity.conversation ?? "(no session id)";
  const root = decision.rootId ?? identity.conversation;
  const tree = decision.scope === "tree" && root && root !== identity.conversation ? ` (tree ${root})` : "";
  const reason = decision.reason ? `: ${decision.reason}` : "";
  const resume = root
    ? `Resume the tree in the stallguard admin page, or POST /api/trees/${root}/resume.`
    : "Resume it in the stallguard admin page.";
  return errorBody(
    `stallguard stopped session ${who}${tree}${reason}. ${resume}`,
    "stallguard_refused",
    decision.scope === "tree" ? "tree_refused" : "session_refused",
  );
}

/**
 * The over-cap answer (auto_limit_context, auto_recover stage 2): HTTP 413 with
 * OpenAI's context_length_exceeded code, which opencode classifies as a context
 * overflow and answers with its own compaction (never retried). The message
 * avoids the words that veto that classification ("rate limit", "too many requests").
 */
export function contextCapBody(identity: GateIdentity, over: { cap: number; tokens: number }): ErrorBody {
  const who = identity.conversation ?? "(no session id)";
  return errorBody(
    `stallguard context cap: session ${who} is at ${over.tokens} prompt tokens, over the cap of ${over.cap} set by progress.mode. Compact the conversation to continue.`,
    "invalid_request_error",
    "context_length_exceeded",
  );
}

function json(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...extra },
  });
}

/** Splits a Connection header into the extra header names it marks hop-by-hop. */
function connectionTokens(headers: Headers): Set<string> {
  const v = headers.get("connection");
  return new Set(
    (v ?? "")
      .split(",")
      .map((t) => t.trim().toLowerCase())
      .filter(Boolean),
  );
}

export function forwardRequestHeaders(incoming: Headers, apiKey: string | null): Headers {
  const listed = connectionTokens(incoming);
  const out = new Headers();
  incoming.forEach((value, name) => {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || DROP_REQUEST.has(n) || listed.has(n)) return;
    out.set(n, value);
  });
  // Plain bytes from upstream: the usage scanner reads them and fetch would decode anyway.
  out.set("accept-encoding", "identity");
  if (apiKey) out.set("authorization", `Bearer ${apiKey}`);
  return out;
}

export function forwardResponseHeaders(incoming: Headers): Headers {
  const listed = connectionTokens(incoming);
  const out = new Headers();
  incoming.forEach((value, name) => {
    const n = name.toLowerCase();
    if (HOP_BY_HOP.has(n) || DROP_RESPONSE.has(n) || listed.has(n)) return;
    out.append(n, value);
  });
  return out;
}

export function upstreamUrl(upstream: string, rest: string, search: string): string {
  return `${upstream.replace(/\/+$/, "")}/${rest.replace(/^\/+/, "")}${search}`;
}

type ReadResult = { ok: true; bytes: Uint8Array<ArrayBuffer> } | { ok: false };

async function readCapped(req: Request, max: number): Promise<ReadResult> {
  if (!req.body) return { ok: true, bytes: new Uint8Array(0) };
  const reader = req.body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel().catch(() => {});
      return { ok: false };
    }
    parts.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return { ok: true, bytes };
}

interface Peek {
  model: string | null;
  /** The body to forward (rewritten when usage was requested on the client's behalf). */
  body: Uint8Array<ArrayBuffer>;
  /** The gate added include_usage, so it hides the usage-only chunk from the client. */
  injected: boolean;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The JSON body with its `model` replaced (the breaker's fallback); unchanged when not a JSON object. */
function withModel(bytes: Uint8Array<ArrayBuffer>, model: string): Uint8Array<ArrayBuffer> {
  try {
    const raw: unknown = JSON.parse(decoder.decode(bytes));
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return bytes;
    return encoder.encode(JSON.stringify({ ...raw, model }));
  } catch {
    return bytes;
  }
}

function peekBody(bytes: Uint8Array<ArrayBuffer>, contentType: string | null, rest: string): Peek {
  const plain: Peek = { model: null, body: bytes, injected: false };
  if (bytes.byteLength === 0 || (contentType !== null && !/json/i.test(contentType))) return plain;
  let raw: unknown;
  try {
    raw = JSON.parse(decoder.decode(bytes));
  } catch {
    return plain; // not ours to judge: the upstream answers it
  }
  const peek = bodyPeek.safeParse(raw);
  if (!peek.success) return plain;
  const model = peek.data.model ?? null;
  const completions = /(^|\/)(chat\/)?completions$/.test(rest);
  if (!completions || peek.data.stream !== true || peek.data.stream_options?.include_usage === true) {
    return { ...plain, model };
  }
  const rewritten = {
    ...peek.data,
    stream_options: { ...(peek.data.stream_options ?? {}), include_usage: true },
  };
  return { model, body: encoder.encode(JSON.stringify(rewritten)), injected: true };
}

/** How a response body is looked at on its way through. */
interface BodyScanner {
  /** Bytes to hand the client for this upstream chunk (may be the same array). */
  chunk(value: Uint8Array): Uint8Array | null;
  /** Bytes still held at the end of the stream. */
  end(): Uint8Array | null;
}

function sseScanner(tracker: UsageTracker, hideUsageChunk: boolean): BodyScanner {
  const dec = new TextDecoder();
  const lines = new LineSplitter();
  if (!hideUsageChunk) {
    // Pure pass-through: the client gets the upstream's bytes as they are.
    return {
      chunk(value) {
        for (const line of lines.push(dec.decode(value, { stream: true }))) {
          if (line.parseable) tracker.see(usageLinePayload(line.text));
        }
        return value;
      },
      end() {
        const last = lines.push(dec.decode());
        const tail = lines.flush();
        for (const line of tail ? [...last, tail] : last) {
          if (line.parseable) tracker.see(usageLinePayload(line.text));
        }
        return null;
      },
    };
  }
  // Line-framed: complete lines go out at once, the usage-only chunk the gate
  // asked for is dropped, a partial line waits for its end (an SSE client cannot
  // use half a line anyway).
  const emit = (found: ReturnType<LineSplitter["push"]>): Uint8Array | null => {
    let out = "";
    for (const line of found) {
      if (line.parseable) {
        const payload = usageLinePayload(line.text);
        if (payload !== undefined) {
          tracker.see(payload);
          if (isUsageOnlyChunk(payload)) continue;
        }
      }
      out += line.text + line.eol;
    }
    return out ? encoder.encode(out) : null;
  };
  return {
    chunk: (value) => emit(lines.push(dec.decode(value, { stream: true }))),
    end() {
      const found = lines.push(dec.decode());
      const tail = lines.flush();
      return emit(tail ? [...found, tail] : found);
    },
  };
}

function jsonScanner(tracker: UsageTracker): BodyScanner {
  let parts: Uint8Array[] | null = [];
  let total = 0;
  return {
    chunk(value) {
      if (parts) {
        total += value.byteLength;
        if (total > MAX_SCAN_BYTES) parts = null;
        else parts.push(value);
      }
      return value;
    },
    end() {
      if (parts && total > 0) {
        const all = new Uint8Array(total);
        let at = 0;
        for (const p of parts) {
          all.set(p, at);
          at += p.byteLength;
        }
        try {
          tracker.see(JSON.parse(decoder.decode(all)));
        } catch {
          // not JSON after all: no usage
        }
      }
      parts = null;
      return null;
    },
  };
}

const passScanner: BodyScanner = { chunk: (v) => v, end: () => null };

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

export type { UpstreamErrorKind };
