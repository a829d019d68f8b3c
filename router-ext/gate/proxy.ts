// The proxy on /v1/*, served straight on node:http (hono's web Request and
// Response objects cost more than the whole proxy), in small named steps:
// admit (the browser checks every write route has, then a client key), read
// the body's start through the rewriter, decide from the store's memory,
// answer locally (refused, capped, too large, no upstream) or forward. No
// request or response body is kept, stored or logged.
import type { IncomingMessage, ServerResponse } from "node:http";
import { browserRefusal } from "../server/browser-guard.ts";
import { errorBody } from "./answers.ts";
import { type ClientKey, clientKeyOf, unauthorizedBody } from "./client-keys.ts";
import { Exchange, type ExchangeEnv } from "./exchange.ts";
import { type ForwardEnv, forward } from "./forward.ts";
import { headerOf } from "./headers.ts";
import { createGateMetrics, type GateMetrics } from "./metrics.ts";
import { type Outgoing, readOutgoing } from "./outgoing-body.ts";
import type { Prices } from "./pricing.ts";
import type { GateDecision, GateIdentity, GateStore } from "./types.ts";
import { type UpstreamTarget, upstreamClient, upstreamTarget } from "./upstream.ts";

/** A body up to this size is read whole before it goes up (with its length); a larger one streams. */
export const BUFFER_BYTES = 1024 * 1024;

export type NodeHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The gate's settings; the server builds a new gate when one of its knobs changes. */
export interface GateOptions {
  /** The upstream's OpenAI base URL, ending in /v1; null answers 503 (refusals still apply). */
  upstream: string | null;
  /** The upstream's key, added after the client key was checked; the client's Authorization never goes up. */
  apiKey: string | null;
  /** The keys a client may present (Bearer); none configured means every /v1 request is refused. */
  clientKeys: readonly ClientKey[];
  /** What the 401 tells the user to set (where the key is and how opencode.json reads it). */
  clientKeyHint?: string;
  /** server.host, for the Host check (421); default 127.0.0.1. */
  host?: () => string;
  /** Counts a request refused before its credential was accepted (421, 403, 415, 401), in memory. */
  onRejected?: (status: number) => void;
  prices: Prices;
  refusal: { status: number; retry_after_s: number | null };
  maxBodyBytes: number;
  /** The longest silence of the upstream: before its response head, and inside a streamed body. */
  timeoutMs: number;
  store: GateStore;
  metrics?: GateMetrics;
  /** One line per notable event (upstream down, store failing); never a body. */
  log?: (line: string) => void;
  /** The clock for request records. Default Date.now. */
  now?: () => number;
  /**
   * The behaviour breaker (sync): a different model for this request and the
   * response header saying so, or null to leave the request as it is.
   */
  modelRoute?: (model: string, identity: GateIdentity) => { model: string; header: string } | null;
}

/** An error's code for a log line (node's, or fetch's cause), never its message. */
export function errorCode(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown }; name?: unknown } | null;
  const code =
    typeof e?.code === "string" ? e.code : typeof e?.cause?.code === "string" ? e.cause.code : e?.name;
  return typeof code === "string" && /^[A-Za-z_]{1,40}$/.test(code) ? code : "error";
}

interface Gate {
  opts: GateOptions;
  env: ExchangeEnv;
  forward: ForwardEnv | null;
  watch: StoreWatch;
}

export function gateProxy(opts: GateOptions): NodeHandler {
  const metrics = opts.metrics ?? createGateMetrics();
  const log = opts.log ?? (() => {});
  const target: UpstreamTarget | null = opts.upstream ? upstreamTarget(opts.upstream) : null;
  // Loaded now, so the first request does not wait for it (a failure shows on that request).
  if (target) upstreamClient().catch(() => {});
  const env: ExchangeEnv = {
    store: opts.store,
    metrics,
    prices: opts.prices,
    now: opts.now ?? Date.now,
    log,
    code: errorCode,
    ...(opts.modelRoute ? { modelRoute: opts.modelRoute } : {}),
  };
  const g: Gate = {
    opts,
    env,
    forward: target && {
      target,
      apiKey: opts.apiKey,
      timeoutMs: opts.timeoutMs,
      maxBodyBytes: opts.maxBodyBytes,
      metrics,
      log,
      code: errorCode,
    },
    watch: new StoreWatch(metrics, log),
  };
  return (req, res) => {
    handle(g, req, res).catch((err: unknown) => {
      log(`error: ${req.method} /v1: ${errorCode(err)}`);
      if (!res.headersSent)
        res.writeHead(500, { "content-type": "application/json" }).end('{"error":"internal error"}');
      else res.destroy();
    });
  };
}

async function handle(g: Gate, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const t0 = performance.now();
  const client = admit(g, req, res);
  if (client === null) return;
  const x = new Exchange(g.env, req, res, client, t0);
  const max = g.opts.maxBodyBytes;
  const declared = Number(req.headers["content-length"] ?? "");
  if (Number.isFinite(declared) && declared > max) {
    req.resume(); // drained, never kept
    return x.tooLarge(max);
  }
  const out: Outgoing = x.reads
    ? { kind: "complete", parts: [], bytes: 0 }
    : await readOutgoing(req, x.rewriter, { bufferBytes: Math.min(BUFFER_BYTES, max + 1), maxBytes: max });
  if (out.kind === "unreadable")
    return x.local(400, errorBody("could not read the request body", "invalid_request_error", "bad_body"));
  if (out.kind === "too_large") return x.tooLarge(max);
  const d = g.watch.decide(x);
  if (d.refused || d.overCap || !g.forward) {
    if (out.kind === "stream") out.from.resume(); // not forwarded: drained, never kept
    if (d.refused) return x.refuse(d, g.opts.refusal);
    if (d.overCap) return x.capped(d.overCap);
    g.env.metrics.upstreamError("no_upstream");
    const message = "stallguard gate: no upstream configured (server.upstream)";
    return x.local(503, errorBody(message, "upstream_error", "no_upstream"));
  }
  await forward(g.forward, x, out);
}

/**
 * The checks before anything is read, learnt or stored: what a web page could
 * send (a foreign Host or Origin, a body that is not JSON), then the client
 * key. Answers the refusal itself; returns the client's key when admitted.
 */
function admit(g: Gate, req: IncomingMessage, res: ServerResponse): ClientKey | null {
  const h = req.headers;
  const length = h["content-length"];
  const browser = browserRefusal(
    {
      method: req.method ?? "GET",
      host: h.host ?? null,
      origin: headerOf(h, "origin"),
      fetchSite: headerOf(h, "sec-fetch-site"),
      contentType: headerOf(h, "content-type"),
      hasBody: (length !== undefined && length.trim() !== "0") || h["transfer-encoding"] !== undefined,
    },
    g.opts.host?.() ?? "127.0.0.1",
  );
  const client = browser ? null : clientKeyOf(h.authorization, g.opts.clientKeys);
  if (!browser) g.env.metrics.request();
  if (client !== null) return client;
  // Before anything else: no body read, nothing stored, the upstream key never used.
  const status = browser?.status ?? 401;
  g.opts.onRejected?.(status);
  if (!browser) g.env.metrics.unauthorized();
  const body = browser
    ? { error: browser.error }
    : unauthorizedBody(
        h.authorization !== undefined,
        g.opts.clientKeyHint ?? "a key from server.client_keys",
      );
  const text = JSON.stringify(body);
  req.resume();
  res.writeHead(status, {
    "content-type": "application/json",
    "content-length": String(Buffer.byteLength(text)),
  });
  res.end(text);
  return null;
}

/**
 * The store's answer, and what happens when it cannot give a sure one. A
 * store that cannot write answers from memory, marked degraded: a known
 * refusal stays refused (fail closed), an unknown session passes (fail open,
 * for availability). A store that throws lets the request through. Each is
 * counted on /metrics and logged once per spell, not once per request.
 */
class StoreWatch {
  private spell: "degraded" | "failed" | null = null;

  constructor(
    private readonly metrics: GateMetrics,
    private readonly log: (line: string) => void,
  ) {}

  decide(x: Exchange): GateDecision {
    let d: GateDecision;
    try {
      d = x.decide();
    } catch (err) {
      this.metrics.storeError();
      this.enter(
        "failed",
        `gate: store.decide failed (${errorCode(err)}); requests let through until it answers`,
      );
      return { refused: false, scope: null, reason: null, rootId: null };
    }
    if (d.degraded) {
      this.metrics.degraded(d.refused ? "refused" : "passed");
      this.enter(
        "degraded",
        "gate: the store cannot write; deciding from what it knows (known refusals stay refused, unknown sessions pass)",
      );
    } else if (this.spell !== null) {
      this.log("gate: the store answers normally again");
      this.spell = null;
    }
    return d;
  }

  private enter(spell: "degraded" | "failed", line: string): void {
    if (this.spell === spell) return;
    this.spell = spell;
    this.log(line);
  }
}
