// The request to the upstream: undici's dispatcher (one keep-alive pool per
// upstream origin for the whole process), the path under the upstream's base,
// and one timeout: the upstream's silence, for the response head and between
// body chunks. No redirect is followed. undici rather than node's http client:
// the gate spends 15% to 27% less CPU a request with it, and a bare proxy
// with undici on its upstream side serves 1.1x to 1.2x the requests of one on
// node:http (bench/gate-latency.ts --undici). It is driven through its
// dispatch handler, the calls undici's own request() is built on: raw headers
// and body chunks, no stream objects in between.
import type { Readable } from "node:stream";
import type { Agent, Dispatcher } from "undici";

/** Every gate in this process shares the pools (one per upstream origin). */
let agent: Agent | null = null;
let loading: Promise<Agent> | null = null;

/**
 * undici, loaded on first need (a gate with an upstream asks when it is
 * built): loading it costs about 40 ms, which every CLI command that never
 * forwards a request would pay at start.
 */
export function upstreamClient(): Promise<Agent> {
  loading ??= import("undici").then((u) => {
    agent = new u.Agent({ pipelining: 1 });
    return agent;
  });
  return loading;
}

/** The client once loaded; null before (forward.ts then waits for upstreamClient()). */
export function loadedUpstreamClient(): Agent | null {
  return agent;
}

export interface UpstreamTarget {
  /** scheme://host:port, the pool's key. */
  origin: string;
  /** The Host header it expects. */
  host: string;
  /** The base path without its trailing slash ("/v1"). */
  prefix: string;
}

/** The upstream base URL (ending in /v1), parsed once per gate. */
export function upstreamTarget(base: string): UpstreamTarget {
  const u = new URL(base);
  return { origin: u.origin, host: u.host, prefix: u.pathname.replace(/\/+$/, "") };
}

/** `<upstream>/<rest><search>` for a client path under /v1. */
export function upstreamPath(target: UpstreamTarget, rest: string, search: string): string {
  return `${target.prefix}/${rest.replace(/^\/+/, "")}${search}`;
}

/** The upstream's response head: its status and raw header list (names and values alternating). */
export interface UpstreamHead {
  status: number;
  rawHeaders: string[];
}

/** Where a response body goes, chunk by chunk. */
export interface BodySink {
  /** False asks the upstream to wait till the call's resume(). */
  data(chunk: Buffer): boolean;
  end(): void;
  error(err: Error): void;
}

export interface UpstreamCall {
  /** The response head, or the error that came first (refused, reset, timed out). */
  head: Promise<UpstreamHead>;
  /** Hands the body to `sink` from its first byte (whatever came with the head is held till then). */
  relay(sink: BodySink): void;
  /** Reads on after the sink asked to wait. */
  resume(): void;
  /** Stops the request and its answer (the client went away). */
  abort(): void;
  /** Whether the silence timeout ended it. */
  timedOut(): boolean;
}

/** The request body: whole, none, or a stream read as the upstream takes it. */
export type UpstreamBody = Uint8Array | Readable | null;

const TIMEOUTS = new Set(["UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);

/** One upstream request as undici reports it, held until forward.ts and relay.ts take it. */
class Call implements UpstreamCall, Dispatcher.DispatchHandler {
  readonly head: Promise<UpstreamHead>;
  private answer!: { resolve: (h: UpstreamHead) => void; reject: (err: Error) => void };
  private headSeen = false;
  private sink: BodySink | null = null;
  /** What came before relay(): chunks, then how it ended. */
  private held: Buffer[] = [];
  private ending: Error | "end" | null = null;
  private stop: ((err?: Error) => void) | null = null;
  private resumeReading: (() => void) | null = null;
  private aborted = false;
  private timed = false;

  constructor() {
    this.head = new Promise<UpstreamHead>((resolve, reject) => {
      this.answer = { resolve, reject };
    });
    // A late error (after the head) is the relay's to report; this one must not go unhandled.
    this.head.catch(() => {});
  }

  relay(sink: BodySink): void {
    this.sink = sink;
    for (const chunk of this.held.splice(0)) sink.data(chunk);
    if (this.ending === "end") sink.end();
    else if (this.ending) sink.error(this.ending);
  }

  resume(): void {
    this.resumeReading?.();
  }

  abort(): void {
    if (this.aborted) return;
    this.aborted = true;
    this.stop?.(new Error("client went away"));
  }

  timedOut(): boolean {
    return this.timed;
  }

  onConnect(abort: (err?: Error) => void): void {
    this.stop = abort;
    if (this.aborted) abort(new Error("client went away"));
  }

  onHeaders(status: number, raw: Buffer[], resume: () => void): boolean {
    if (status < 200) return true; // an informational head; the answer's own follows
    this.headSeen = true;
    this.resumeReading = resume;
    const rawHeaders = new Array<string>(raw.length);
    for (let i = 0; i < raw.length; i++) rawHeaders[i] = (raw[i] as Buffer).toString("latin1");
    this.answer.resolve({ status, rawHeaders });
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.sink) return this.sink.data(chunk);
    this.held.push(chunk);
    return true;
  }

  onComplete(): void {
    if (this.sink) this.sink.end();
    else this.ending = "end";
  }

  onError(err: Error): void {
    this.timed = TIMEOUTS.has((err as { code?: string }).code ?? "");
    if (!this.headSeen) this.answer.reject(err);
    else if (this.sink) this.sink.error(err);
    else this.ending = err;
  }
}

export function openUpstream(
  client: Agent,
  target: UpstreamTarget,
  o: { method: string; path: string; headers: string[]; body: UpstreamBody; timeoutMs: number },
): UpstreamCall {
  const call = new Call();
  o.headers.push("host", target.host);
  client.dispatch(
    {
      origin: target.origin,
      method: o.method as Dispatcher.HttpMethod,
      path: o.path,
      headers: o.headers,
      body: o.body,
      headersTimeout: o.timeoutMs,
      bodyTimeout: o.timeoutMs,
    },
    call,
  );
  return call;
}
