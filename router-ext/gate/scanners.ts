// How a response body is looked at on its way down: SSE lines scanned for
// the usage chunk (hidden when the gate asked for it), JSON scanned once at
// the end, anything else passed through. Most SSE chunks are whole events
// without usage: those pass as they are, neither decoded nor split.
import { concat } from "./request-body.ts";
import { isUsageOnlyChunk, LineSplitter, type UsageTracker, usageLinePayload } from "./usage.ts";

/** Largest non-streaming JSON answer scanned for usage; bigger ones pass through unscanned. */
export const MAX_SCAN_BYTES = 8 * 1024 * 1024;

const decoder = new TextDecoder();
const encoder = new TextEncoder();
/**
 * Decodes SSE chunks that end a line after one that did: such a chunk ends
 * no UTF-8 sequence halfway, so it needs no state of its own. A TextDecoder
 * made per streamed answer was an ICU converter per request, freed only by
 * the garbage collector's weak-handle pass (about a third of each young-
 * generation pause of a gate under streaming load). A BOM is kept as a
 * character, as every byte the client gets.
 */
const lineDecoder = new TextDecoder("utf-8", { ignoreBOM: true });
const USAGE = Buffer.from('"usage"');
const LF = 0x0a;

/**
 * Whether a chunk can pass without being read: the stream before it ended a
 * line (no partial line or UTF-8 sequence is held), it ends one too, and no
 * line in it can carry usage (usageLinePayload needs the bytes "usage").
 */
function passesWhole(value: Uint8Array, aligned: boolean): boolean {
  if (!aligned || value.byteLength === 0 || value[value.byteLength - 1] !== LF) return false;
  const bytes = Buffer.isBuffer(value)
    ? value
    : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  return bytes.indexOf(USAGE) < 0;
}

const endsLine = (value: Uint8Array) => value.byteLength > 0 && value[value.byteLength - 1] === LF;

/** How a response body is looked at on its way through. */
export interface BodyScanner {
  /** Bytes to hand the client for this upstream chunk (may be the same array). */
  chunk(value: Uint8Array): Uint8Array | null;
  /** Bytes still held at the end of the stream. */
  end(): Uint8Array | null;
}

export function sseScanner(tracker: UsageTracker, hideUsageChunk: boolean): BodyScanner {
  const lines = new LineSplitter();
  /** The bytes so far ended a line: nothing is held by the decoder or the splitter. */
  let aligned = true;
  /** Made when a chunk ends inside a line (a UTF-8 sequence may run on into the next). */
  let dec: TextDecoder | null = null;
  const text = (value: Uint8Array): string => {
    if (aligned && endsLine(value)) return lineDecoder.decode(value);
    dec ??= new TextDecoder("utf-8", { ignoreBOM: true });
    return dec.decode(value, { stream: true });
  };
  const rest = (): string => dec?.decode() ?? "";
  if (!hideUsageChunk) {
    // Pure pass-through: the client gets the upstream's bytes as they are.
    return {
      chunk(value) {
        if (passesWhole(value, aligned)) return value;
        for (const line of lines.push(text(value))) {
          if (line.parseable) tracker.see(usageLinePayload(line.text));
        }
        aligned = endsLine(value);
        return value;
      },
      end() {
        const last = lines.push(rest());
        const tail = lines.flush();
        for (const line of tail ? [...last, tail] : last) {
          if (line.parseable) tracker.see(usageLinePayload(line.text));
        }
        return null;
      },
    };
  }
  // Line-framed: complete lines go out at once, the usage-only chunk the gate
  // asked for is dropped, a partial line waits for its end (an SSE client cannot
  // use half a line anyway).
  const emit = (found: ReturnType<LineSplitter["push"]>): Uint8Array | null => {
    let out = "";
    for (const line of found) {
      if (line.parseable) {
        const payload = usageLinePayload(line.text);
        if (payload !== undefined) {
          tracker.see(payload);
          if (isUsageOnlyChunk(payload)) continue;
        }
      }
      out += line.text + line.eol;
    }
    return out ? encoder.encode(out) : null;
  };
  return {
    chunk(value) {
      // Whole lines without usage: emit would give back these same bytes.
      if (passesWhole(value, aligned)) return value;
      const found = lines.push(text(value));
      aligned = endsLine(value);
      return emit(found);
    },
    end() {
      const found = lines.push(rest());
      const tail = lines.flush();
      return emit(tail ? [...found, tail] : found);
    },
  };
}

export function jsonScanner(tracker: UsageTracker): BodyScanner {
  let parts: Uint8Array[] | null = [];
  let total = 0;
  return {
    chunk(value) {
      if (parts) {
        total += value.byteLength;
        if (total > MAX_SCAN_BYTES) parts = null;
        else parts.push(value);
      }
      return value;
    },
    end() {
      if (parts && total > 0) {
        // One chunk (most answers) is read where it is, not copied first.
        const all = parts.length === 1 ? (parts[0] as Uint8Array) : concat(parts);
        try {
          tracker.see(JSON.parse(decoder.decode(all)));
        } catch {
          // not JSON after all: no usage
        }
      }
      parts = null;
      return null;
    },
  };
}

export const passScanner: BodyScanner = { chunk: (v) => v, end: () => null };
