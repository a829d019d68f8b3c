// The upstream request for a body that streams: node's http client, written
// only as fast as the upstream socket drains. Node 20's fetch (undici) reads a
// ReadableStream request body far ahead of the socket, so 20 concurrent 50 MB
// bodies held about 1 GB (bench/gate-memory.ts); this keeps one chunk each.
// The answer comes back as a fetch Response whose body is read on demand too.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { incomingBody } from "./incoming-body.ts";

/** A fetch for the gate's streamed bodies: method, headers, body, signal; no redirects followed. */
export function streamFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const url = new URL(typeof input === "string" || input instanceof URL ? input : input.url);
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => {
      headers[k] = v;
    });
    const send = url.protocol === "https:" ? httpsRequest : httpRequest;
    const method = init.method ?? "GET";
    // Errors shaped like fetch's (a TypeError whose cause carries the code), so the gate logs the same codes.
    const failed = (err: unknown) => Object.assign(new TypeError("fetch failed"), { cause: err });
    const req = send(url, { method, headers, ...(init.signal ? { signal: init.signal } : {}) }, (res) => {
      const out = new Headers();
      for (let i = 0; i + 1 < res.rawHeaders.length; i += 2)
        out.append(res.rawHeaders[i] as string, res.rawHeaders[i + 1] as string);
      const status = res.statusCode ?? 502;
      const empty = method === "HEAD" || status === 204 || status === 304;
      if (empty) res.resume();
      resolve(
        new Response(empty ? null : incomingBody(res), {
          status,
          statusText: res.statusMessage,
          headers: out,
        }),
      );
    });
    req.on("error", (err) => reject(failed(err)));
    void write(req, init.body);
  });
}

async function write(req: ReturnType<typeof httpRequest>, body: RequestInit["body"]): Promise<void> {
  try {
    if (body === null || body === undefined) return void req.end();
    if (body instanceof Uint8Array || typeof body === "string") return void req.end(body);
    if (!(body instanceof ReadableStream)) throw new Error("streamFetch: unsupported body");
    const reader = (body as ReadableStream<Uint8Array>).getReader();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!req.write(value)) await new Promise<void>((r) => req.once("drain", () => r()));
      if (req.destroyed) return void reader.cancel().catch(() => {});
    }
    req.end();
  } catch (err) {
    // The body failed (over the gate's cap, the client left): the upstream request goes too.
    req.destroy(err as Error);
  }
}
