// A request the gate lets through: sent upstream (a whole body with its
// length, a larger one streamed on), answered with the upstream's head and
// its body relayed chunk by chunk through a usage scanner, recorded when the
// body ends. An upstream that is down, silent or cut short is answered with
// an OpenAI-shaped error (502, 504) or, mid-body, a broken stream.
import { errorBody } from "./answers.ts";
import type { Exchange } from "./exchange.ts";
import { forwardRequestHeaders, forwardResponseHeaders, rawHeader } from "./headers.ts";
import type { GateMetrics } from "./metrics.ts";
import { type Outgoing, restOf } from "./outgoing-body.ts";
import { relayResponse } from "./relay.ts";
import { concat } from "./request-body.ts";
import { jsonScanner, passScanner, sseScanner } from "./scanners.ts";
import {
  loadedUpstreamClient,
  openUpstream,
  type UpstreamBody,
  type UpstreamCall,
  type UpstreamHead,
  type UpstreamTarget,
  upstreamClient,
  upstreamPath,
} from "./upstream.ts";
import { UsageTracker } from "./usage.ts";

export interface ForwardEnv {
  target: UpstreamTarget;
  apiKey: string | null;
  timeoutMs: number;
  maxBodyBytes: number;
  metrics: GateMetrics;
  log: (line: string) => void;
  code: (err: unknown) => string;
}

export async function forward(env: ForwardEnv, x: Exchange, out: Outgoing): Promise<void> {
  const whole = out.kind === "complete" ? out : null;
  const over = { capped: false };
  const client = loadedUpstreamClient() ?? (await upstreamClient());
  const call = openUpstream(client, env.target, {
    method: x.req.method ?? "GET",
    path: upstreamPath(env.target, x.rest, x.search),
    headers: forwardRequestHeaders(x.req.rawHeaders, env.apiKey, whole && !x.reads ? whole.bytes : null),
    body: bodyOf(out, x, env.maxBodyBytes, over),
    timeoutMs: env.timeoutMs,
  });
  // The client gone before the answer: the upstream request goes too.
  const onClientGone = () => {
    if (!x.res.headersSent) call.abort();
  };
  x.res.once("close", onClientGone);
  const tSent = performance.now();
  let head: UpstreamHead;
  try {
    head = await call.head;
  } catch (err) {
    x.res.off("close", onClientGone);
    if (x.res.destroyed)
      return x.record({ status: 499, usage: null, upstreamModel: null, error: "client_abort", bytes: null });
    if (over.capped) return x.tooLarge(env.maxBodyBytes);
    return upstreamFailed(env, x, call, err);
  }
  x.res.off("close", onClientGone);
  respond(env, x, call, head, performance.now() - tSent);
}

/** What goes up: a whole body in one write (its head and bytes in one packet), or the stream on. */
function bodyOf(out: Outgoing, x: Exchange, maxBytes: number, over: { capped: boolean }): UpstreamBody {
  if (out.kind === "stream") return restOf(out, x.rewriter, maxBytes, over);
  if (out.kind !== "complete" || x.reads || out.bytes === 0) return null;
  return out.parts.length === 1 ? (out.parts[0] as Uint8Array) : concat(out.parts);
}

function upstreamFailed(env: ForwardEnv, x: Exchange, call: UpstreamCall, err: unknown): void {
  if (call.timedOut()) {
    env.metrics.upstreamError("timeout");
    env.log(`gate: upstream timed out after ${env.timeoutMs} ms`);
    const message = `stallguard gate: upstream did not answer within ${env.timeoutMs} ms`;
    x.local(504, errorBody(message, "upstream_error", "upstream_timeout"));
    return;
  }
  env.metrics.upstreamError("unreachable");
  const code = env.code(err);
  env.log(`gate: upstream unreachable (${code})`);
  x.local(
    502,
    errorBody(`stallguard gate: upstream unreachable (${code})`, "upstream_error", "upstream_unreachable"),
  );
}

/** Sends the upstream's head and relays its body; the record is written when the body ends. */
function respond(
  env: ForwardEnv,
  x: Exchange,
  call: UpstreamCall,
  head: UpstreamHead,
  upstreamMs: number,
): void {
  const tracker = new UsageTracker();
  const contentType = rawHeader(head.rawHeaders, "content-type") ?? "";
  // Bytes the upstream compressed anyway pass untouched (and unscanned).
  const encoded = (rawHeader(head.rawHeaders, "content-encoding") ?? "identity") !== "identity";
  const sse = !encoded && /text\/event-stream/i.test(contentType);
  const scanner = sse
    ? sseScanner(tracker, x.rewriter.injected)
    : !encoded && /json/i.test(contentType)
      ? jsonScanner(tracker)
      : passScanner;
  const status = head.status;
  // The length holds unless the scanner drops the usage chunk the gate asked for.
  const headers = forwardResponseHeaders(head.rawHeaders, !(sse && x.rewriter.injected));
  if (x.routed) headers.push("x-stallguard-breaker", x.routed.header);
  const answer = (error: string | null, bytes: number) => ({
    status,
    usage: tracker.usage,
    upstreamModel: tracker.model,
    error,
    bytes,
  });
  x.res.writeHead(status, headers);
  env.metrics.observeOverhead(performance.now() - x.t0 - upstreamMs);
  if (x.req.method === "HEAD" || status === 204 || status === 304) {
    x.res.end();
    x.record(answer(null, 0));
    return;
  }
  relayResponse(call, x.res, scanner, {
    code: env.code,
    onEnd: (end) => {
      if (end.error === "upstream_stream" || end.error === "idle_timeout") {
        env.metrics.upstreamError(end.error === "idle_timeout" ? "timeout" : "stream");
        const what = end.error === "idle_timeout" ? `silent for ${env.timeoutMs} ms` : `failed (${end.code})`;
        env.log(`gate: upstream body ${what} after ${end.bytes} bytes`);
      }
      x.record(answer(end.error, end.bytes));
    },
  });
}
