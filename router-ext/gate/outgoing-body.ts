// The body the gate sends upstream, with bounded memory: the first
// `bufferBytes` are read (and rewritten) before the gate decides, so a small
// body, which is nearly every request, goes up whole with its length, and an
// oversized small one is never forwarded. A larger body streams on from there
// chunk by chunk as the upstream pulls it, counted against the cap as it goes.
import { type BodyRewriter, concat } from "./request-body.ts";

export type Outgoing =
  | { kind: "complete"; bytes: Uint8Array<ArrayBuffer> }
  | { kind: "stream"; stream: ReadableStream<Uint8Array>; overCap: () => boolean }
  | { kind: "too_large" }
  | { kind: "unreadable" };

/**
 * Reads the start of `body` through `rewriter`. Resolves once the body ended
 * (complete), or once `bufferBytes` were read (stream: the rest follows as the
 * returned stream is pulled; overCap() tells whether it was cut at `maxBytes`).
 */
export async function outgoingBody(
  body: ReadableStream<Uint8Array> | null,
  rewriter: BodyRewriter,
  opts: { bufferBytes: number; maxBytes: number },
): Promise<Outgoing> {
  if (!body) return { kind: "complete", bytes: new Uint8Array(0) };
  const reader = body.getReader();
  const head: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < opts.bufferBytes) {
      const { done, value } = await reader.read();
      if (done) {
        head.push(...rewriter.end());
        return { kind: "complete", bytes: concat(head) };
      }
      total += value.byteLength;
      if (total > opts.maxBytes) {
        await reader.cancel().catch(() => {});
        return { kind: "too_large" };
      }
      head.push(...rewriter.push(value));
    }
  } catch {
    return { kind: "unreadable" };
  }
  let cut = false;
  const stream = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      const first = head.shift();
      if (first) {
        ctrl.enqueue(first);
        return;
      }
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          for (const p of rewriter.end()) ctrl.enqueue(p);
          ctrl.close();
          return;
        }
        total += value.byteLength;
        if (total > opts.maxBytes) {
          cut = true;
          await reader.cancel().catch(() => {});
          ctrl.error(new Error("request body over the cap"));
          return;
        }
        const parts = rewriter.push(value);
        if (parts.length === 0) continue;
        for (const p of parts) ctrl.enqueue(p);
        return;
      }
    },
    cancel(reason) {
      return reader.cancel(reason).catch(() => {});
    },
  });
  return { kind: "stream", stream, overCap: () => cut };
}
