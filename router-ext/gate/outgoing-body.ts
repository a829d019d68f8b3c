// The body the gate sends upstream, with bounded memory: the first
// `bufferBytes` are read (and rewritten) before the gate decides, so a small
// body, which is nearly every request, goes up whole with its length, and an
// oversized small one is never forwarded. A larger body streams on from there
// (sendRest) as fast as the upstream socket takes it, counted against the cap
// as it goes; the client's socket is read no faster.
import type { ClientRequest, IncomingMessage } from "node:http";
import type { BodyRewriter } from "./request-body.ts";

export type Outgoing =
  | { kind: "complete"; parts: Uint8Array[]; bytes: number }
  /** The first parts are read; the rest of `from` follows through sendRest. */
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
 * Sends the rest of a streamed body to `up` after its first parts, with
 * backpressure. Resolves true once it ended, false when it went over the cap
 * or the client's side failed (the upstream request is destroyed then).
 */
export function sendRest(
  o: Extract<Outgoing, { kind: "stream" }>,
  up: ClientRequest,
  rewriter: BodyRewriter,
  maxBytes: number,
): Promise<boolean> {
  return new Promise((resolve) => {
    const req = o.from;
    let read = o.read;
    const finish = (ok: boolean) => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onFail);
      req.off("close", onFail);
      up.off("drain", onDrain);
      if (!ok) {
        req.resume();
        up.destroy(new Error("request body over the cap or unreadable"));
      }
      resolve(ok);
    };
    const write = (p: Uint8Array) => {
      if (!up.write(p)) req.pause();
    };
    const onData = (chunk: Buffer) => {
      read += chunk.byteLength;
      if (read > maxBytes) return finish(false);
      for (const p of rewriter.push(chunk)) write(p);
    };
    const onEnd = () => {
      for (const p of rewriter.end()) up.write(p);
      up.end();
      finish(true);
    };
    const onFail = () => finish(false);
    const onDrain = () => req.resume();
    for (const p of o.parts) up.write(p);
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onFail);
    req.on("close", onFail);
    up.on("drain", onDrain);
    req.resume();
  });
}
