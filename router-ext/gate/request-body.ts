// The request body on its way up: read with a cap, peeked at for the model
// and the stream flag (never stored), rewritten only to ask for usage or to
// route to the breaker's fallback model.
import { z } from "zod";

// Only the fields the gate reads; the rest of the (client's) body is forwarded untouched,
// so this is deliberately not strict.
const bodyPeek = z.looseObject({
  model: z.string().max(256).optional(),
  stream: z.boolean().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
});

export type ReadResult = { ok: true; bytes: Uint8Array<ArrayBuffer> } | { ok: false };

export async function readCapped(req: Request, max: number): Promise<ReadResult> {
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

export interface Peek {
  model: string | null;
  /** The body to forward (rewritten when usage was requested on the client's behalf). */
  body: Uint8Array<ArrayBuffer>;
  /** The gate added include_usage, so it hides the usage-only chunk from the client. */
  injected: boolean;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The JSON body with its `model` replaced (the breaker's fallback); unchanged when not a JSON object. */
export function withModel(bytes: Uint8Array<ArrayBuffer>, model: string): Uint8Array<ArrayBuffer> {
  try {
    const raw: unknown = JSON.parse(decoder.decode(bytes));
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return bytes;
    return encoder.encode(JSON.stringify({ ...raw, model }));
  } catch {
    return bytes;
  }
}

export function peekBody(bytes: Uint8Array<ArrayBuffer>, contentType: string | null, rest: string): Peek {
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
