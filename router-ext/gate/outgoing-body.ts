// The body the gate sends upstream, with bounded memory: the first
// `bufferBytes` are read (and rewritten) before the gate decides, so a small
// body, which is nearly every request, goes up whole with its length, and an
// oversized small one is never forwarded. A larger body streams on from there
// (restOf) as fast as the upstream socket takes it, counted against the cap
// as it goes; the client's socket is read no faster.
import type { IncomingMessage } from "node:http";
import { Readable } from "node:stream";
import type { BodyRewriter } from "./request-body.ts";

export type Outgoing =
  | { kind: "complete"; parts: Uint8Array[]; bytes: number }
  /** The first parts are read; the rest of `from` follows through restOf. */
  | { kind: "stream"; parts: Uint8Array[]; read: number; from: IncomingMessage }
  | { kind: "too_large" }
  | { kind: "unreadable" };

export interface BodyLimits {
  bufferBytes: number;
  maxBytes: number;
}

/** Reads the start of `req` through `rewriter`: all of it when it ends within `bufferBytes`. */
export function readOutgoing(
  req: IncomingMessage,
  rewriter: BodyRewriter,
  limits: BodyLimits,
): Promise<Outgoing> {
  return new Promise((resolve) => {
    const parts: Uint8Array[] = [];
    let read = 0;
    let out = 0;
    const done = (o: Outgoing) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
      req.off("close", onError);
      resolve(o);
    };
    const onData = (chunk: Buffer) => {
      read += chunk.byteLength;
      if (read > limits.maxBytes) {
        req.resume(); // drained, never kept: the 413 still reaches the client
        return done({ kind: "too_large" });
      }
      for (const p of rewriter.push(chunk)) {
        parts.push(p);
        out += p.byteLength;
      }
      if (read >= limits.bufferBytes) {
        req.pause();
        done({ kind: "stream", parts, read, from: req });
      }
    };
    const onEnd = () => {
      for (const p of rewriter.end()) {
        parts.push(p);
        out += p.byteLength;
      }
      done({ kind: "complete", parts, bytes: out });
    };
    // An error, or the client gone before the body ended.
    const onError = () => done({ kind: "unreadable" });
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
    req.on("close", onError);
  });
}

/**
 * A streamed body for the upstream: its first parts, then the rest of the
 * client's body as it comes, rewritten and counted against the cap. The
 * client's socket is read only as fast as the upstream takes it (the client
 * pauses while the body's buffer is full; undici pauses the body while the
 * upstream socket is). `over` turns true when the cap is passed: the body
 * then fails, which aborts the upstream request, and the rest of the client's
 * body is drained unread so the 413 reaches it. Chunks pass as they come.
 */
export function restOf(
  o: Extract<Outgoing, { kind: "stream" }>,
  rewriter: BodyRewriter,
  maxBytes: number,
  over: { capped: boolean },
): Readable {
  const from = o.from;
  let read = o.read;
  const stop = () => {
    from.off("data", onData);
    from.off("end", onEnd);
    from.off("error", onFail);
    from.off("close", onFail);
  };
  const body = new Readable({ read: () => from.resume() });
  const onData = (chunk: Buffer) => {
    read += chunk.byteLength;
    if (read > maxBytes) {
      over.capped = true;
      stop();
      from.resume(); // drained, never kept: the 413 still reaches the client
      body.destroy(new Error("request body over the cap"));
      return;
    }
    let more = true;
    for (const p of rewriter.push(chunk)) more = body.push(p);
    if (!more) from.pause();
  };
  const onEnd = () => {
    stop();
    for (const p of rewriter.end()) body.push(p);
    body.push(null);
  };
  const onFail = () => {
    stop();
    body.destroy(new Error("request body unreadable"));
  };
  for (const p of o.parts) body.push(p);
  from.on("data", onData);
  from.on("end", onEnd);
  from.on("error", onFail);
  from.on("close", onFail);
  return body;
}
