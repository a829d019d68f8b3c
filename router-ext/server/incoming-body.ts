// A request body as a web stream that reads the socket only as fast as it is
// pulled. @hono/node-server's own body (Readable.toWeb) buffers without bound
// on Node 20 (its queue counts chunks, up to 16,384 of them), so a proxied 50 MB
// body sat whole in memory; this one holds one chunk at a time. Cancelling it
// drains the rest without keeping it, so the answer (401, 413) still reaches
// the client instead of a reset connection.
import type { IncomingMessage } from "node:http";
import type { Context } from "hono";

export function incomingBody(incoming: IncomingMessage): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      pull(ctrl) {
        return new Promise<void>((resolve, reject) => {
          const cleanup = () => {
            incoming.off("readable", attempt);
            incoming.off("end", attempt);
            incoming.off("error", fail);
          };
          const fail = (err: Error) => {
            cleanup();
            reject(err);
          };
          function attempt(): void {
            const chunk = incoming.read() as Buffer | null;
            if (chunk !== null) {
              cleanup();
              ctrl.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
              resolve();
            } else if (incoming.readableEnded) {
              cleanup();
              ctrl.close();
              resolve();
            }
          }
          incoming.on("readable", attempt);
          incoming.on("end", attempt);
          incoming.on("error", fail);
          attempt();
        });
      },
      cancel() {
        incoming.resume();
      },
    },
    { highWaterMark: 0 },
  );
}

/** The node request behind a hono context (@hono/node-server passes it as env.incoming), else null. */
export function nodeBody(c: Context): ReadableStream<Uint8Array> | null {
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  return incoming && typeof incoming.read === "function" ? incomingBody(incoming) : null;
}
