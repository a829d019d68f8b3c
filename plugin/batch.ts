// Which queued messages go in the next POST /progress: as many as fit under
// the router's body limit (and the wire's 100 a batch), oldest first. A
// heartbeat bigger than the limit is cut into heartbeats over fewer sessions,
// each one whole on the wire, so every session still reads as live. Pure
// functions on values; the reporter carries them out.
import type { Heartbeat, ProgressMessage } from "../shared/index.ts";

/** The wire allows at most this many messages in one body. */
export const MAX_BATCH = 100;

const enc = new TextEncoder();
const sizes = new WeakMap<object, number>();

/** The message's size on the wire in bytes (UTF-8 JSON), remembered per message. */
export function messageBytes(m: ProgressMessage): number {
  let n = sizes.get(m);
  if (n === undefined) {
    n = enc.encode(JSON.stringify(m)).length;
    sizes.set(m, n);
  }
  return n;
}

/** The size of a body of these messages: the message itself, or a JSON array of them. */
export function bodyBytes(batch: readonly ProgressMessage[]): number {
  if (batch.length === 1) return messageBytes(batch[0] as ProgressMessage);
  return batch.reduce((sum, m) => sum + messageBytes(m), 0) + batch.length + 1;
}

/** A heartbeat cut into heartbeats of at most `maxBytes` each (one session each at the least). */
export function splitHeartbeat(hb: Heartbeat, maxBytes: number): Heartbeat[] {
  if (messageBytes(hb) <= maxBytes || hb.sessions.length <= 1) return [hb];
  const shell = messageBytes({ ...hb, sessions: [] });
  const out: Heartbeat[] = [];
  let current: Heartbeat["sessions"] = [];
  let bytes = shell;
  for (const s of hb.sessions) {
    const size = enc.encode(JSON.stringify(s)).length + 1;
    if (current.length > 0 && bytes + size > maxBytes) {
      out.push({ ...hb, sessions: current });
      current = [];
      bytes = shell;
    }
    current.push(s);
    bytes += size;
  }
  if (current.length > 0) out.push({ ...hb, sessions: current });
  return out;
}

/** The queue with every heartbeat over the limit cut to fit. */
export function fitHeartbeats(queue: readonly ProgressMessage[], maxBytes: number): ProgressMessage[] {
  return queue.flatMap((m) =>
    m.type === "heartbeat" && messageBytes(m) > maxBytes ? splitHeartbeat(m, maxBytes) : [m],
  );
}

/**
 * The next batch: the oldest messages whose body fits in `maxBytes`, at most
 * `maxCount`. Always at least one message (a single one over the limit goes
 * alone, and the router's 413 says what to do with it).
 */
export function takeBatch(
  queue: readonly ProgressMessage[],
  maxBytes: number,
  maxCount = MAX_BATCH,
): ProgressMessage[] {
  const batch: ProgressMessage[] = [];
  let bytes = 1; // the opening bracket
  for (const m of queue) {
    if (batch.length >= Math.min(maxCount, MAX_BATCH)) break;
    const size = messageBytes(m) + 1; // the message and its comma or closing bracket
    if (batch.length > 0 && bytes + size > maxBytes) break;
    batch.push(m);
    bytes += size;
  }
  return batch;
}

/** The router's body limit named in a 413 answer or in /health, or null. */
export function limitFrom(body: string): number | null {
  try {
    const v = (JSON.parse(body) as { max_progress_bytes?: unknown })?.max_progress_bytes;
    return typeof v === "number" && Number.isInteger(v) && v >= 256 ? v : null;
  } catch {
    return null;
  }
}
