// The body the gate sends upstream, with bounded memory: the first
// `bufferBytes` are read (and rewritten) before the gate decides, so a small
// body, which is nearly every request, goes up whole with its length, and an
// oversized small one is never forwarded. A larger body streams on from there
// (restOf) as fast as the upstream socket takes it, counted against the cap
// as it goes; the client's socket is read no faster.
import type { IncomingMessage } from "node:http";
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
 * client's body as it comes, rewritten and counted against the cap; the
 * client's socket is read only as fast as the upstream takes it (undici pulls
 * the next chunk once the last is written). `over` turns true when the cap is
 * passed: the body then throws, which aborts the upstream request, and the
 * rest of the client's body is drained unread so the 413 reaches it.
 */
export async function* restOf(
  o: Extract<Outgoing, { kind: "stream" }>,
  rewriter: BodyRewriter,
  maxBytes: number,
  over: { capped: boolean },
): AsyncGenerator<Uint8Array> {
  yield* o.parts;
  let read = o.read;
  // Not destroyed when this generator stops early: the client must still get its answer.
  for await (const chunk of o.from.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>) {
    read += chunk.byteLength;
    if (read > maxBytes) {
      over.capped = true;
      o.from.resume();
      throw new Error("request body over the cap");
    }
    yield* rewriter.push(chunk);
  }
  yield* rewriter.end();
}
