// The request body on its way up, rewritten as its bytes go by: never parsed
// whole, never held whole. A byte scanner follows the JSON object's top level
// only, so memory stays at one chunk plus the few small values it holds:
// `model` (read, and replaced by the breaker's fallback), `stream` and
// `stream_options` (read, so usage can be asked for on the client's behalf).
// Nothing is stored.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** Longest value held back while it is read (a model name, stream_options). */
const MAX_HELD = 4096;
/** The watched keys as their bytes: a key is told by its bytes, not decoded (one allocation less per key). */
const WATCHED: ReadonlyArray<readonly [string, Uint8Array]> = ["model", "stream", "stream_options"].map(
  (name) => [name, enc.encode(name)] as const,
);
/** What the gate appends to a streaming completion's body that has no stream_options (after a key, or alone). */
const ASK_USAGE = enc.encode(`,"stream_options":{"include_usage":true}`);
const ASK_USAGE_ALONE = ASK_USAGE.subarray(1);

/** stringEnd's answers when the string runs past the chunk: its last byte left an escape open, or not. */
const RAN_ON = -1;
const RAN_ON_ESCAPED = -2;

/**
 * The index of the quote closing a string whose bytes start at `from`
 * (`escaped`: the first byte is escaped), found with indexOf and the parity
 * of the backslashes before each quote; RAN_ON(_ESCAPED) past the chunk.
 */
function stringEnd(chunk: Uint8Array, from: number, escaped: boolean): number {
  let j = escaped ? from + 1 : from;
  for (;;) {
    const q = chunk.indexOf(QUOTE, j);
    const stop = q < 0 ? chunk.length : q;
    let k = stop - 1;
    while (k >= j && chunk[k] === BACKSLASH) k--;
    const odd = (stop - 1 - k) % 2 === 1;
    if (q < 0) return odd ? RAN_ON_ESCAPED : RAN_ON;
    if (!odd) return q;
    j = q + 1;
  }
}

/** A short string without escapes (keys, enum values), found byte by byte: cheaper than indexOf's call. */
function shortStringEnd(chunk: Uint8Array, from: number): number | null {
  const stop = Math.min(chunk.length, from + 48);
  for (let j = from; j < stop; j++) {
    const c = chunk[j];
    if (c === QUOTE) return j;
    if (c === BACKSLASH) return null;
  }
  return null;
}

const isSpace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

type Phase = "start" | "key" | "colon" | "value" | "after" | "done" | "opaque";

/** Where push() is in its chunk: bytes before `from` are passed on (in `out`) or held. */
interface Cursor {
  chunk: Uint8Array;
  from: number;
  out: Uint8Array[];
}

/**
 * Longest key read: the longest watched key with every character escaped
 * (`\u0073...`, 6 bytes a character). A longer key is no watched one.
 */
const MAX_KEY_BYTES = 6 * Math.max(...WATCHED.map(([name]) => name.length));

/**
 * The watched key whose bytes these are, or "" (a key of another name is not
 * watched). A key with escapes is read as JSON reads it: `"mod\u0065l"` is
 * model to the upstream, so it is to the gate.
 */
function watchedKey(bytes: readonly number[]): string {
  if (bytes.length > MAX_KEY_BYTES) return "";
  if (bytes.includes(BACKSLASH)) return escapedKey(bytes);
  for (const [name, watched] of WATCHED) {
    if (watched.length !== bytes.length) continue;
    let i = 0;
    while (i < bytes.length && watched[i] === bytes[i]) i++;
    if (i === bytes.length) return name;
  }
  return "";
}

function escapedKey(bytes: readonly number[]): string {
  let name: unknown;
  try {
    name = JSON.parse(`"${dec.decode(Uint8Array.from(bytes))}"`);
  } catch {
    return "";
  }
  return WATCHED.some(([watched]) => watched === name) ? (name as string) : "";
}

/** Passes the chunk's bytes from the cursor up to `to` on unchanged. */
function emit(c: Cursor, to: number): void {
  if (to > c.from) c.out.push(c.chunk.subarray(c.from, to));
  c.from = to;
}

export interface RewriterOptions {
  /** The request goes to a completions path (usage may be asked for). */
  completions: boolean;
  /** Called once with the body's model: the model to send instead, or null to keep it. */
  onModel?: (model: string) => string | null;
}

/**
 * Feeds the body chunk by chunk; each push returns the bytes to send on. A body
 * that is not a JSON object passes through untouched (the upstream judges it).
 */
export class BodyRewriter {
  model: string | null = null;
  stream: boolean | null = null;
  /** The gate added stream_options.include_usage, so the usage-only chunk is hidden from the client. */
  injected = false;
  private phase: Phase = "start";
  private depth = 0;
  private inString = false;
  private escaped = false;
  private hasKey = false;
  /** The key being read, its bytes so far (one array reused for every key), or null outside a key. */
  private key: number[] | null = null;
  private readonly keyBuffer: number[] = [];
  /** The last key read when it is a watched one, else "". */
  private keyName = "";
  private sawStreamOptions = false;
  /** The watched value being read: its bytes so far, and how it ends. */
  private held: Uint8Array[] | null = null;
  private heldBytes = 0;
  private heldKind: "string" | "nested" | "literal" = "literal";

  constructor(private readonly opts: RewriterOptions) {}

  push(chunk: Uint8Array): Uint8Array[] {
    const c: Cursor = { chunk, from: 0, out: [] };
    for (let i = 0; i < chunk.length; i++) {
      if (this.phase === "opaque" || this.phase === "done") break;
      if (this.inString) {
        i = this.closeString(c, i);
        if (i < 0) break;
        continue;
      }
      if (this.depth >= 2) {
        // Inside a top-level value (messages, tools): only its end matters.
        i = this.skipNested(chunk, i);
        if (i < 0) break;
      }
      if (!this.structure(c, i)) break;
    }
    return this.keepRest(c);
  }

  /** Straight to the string's closing quote (strings are most of a body); -1 when it runs on. */
  private closeString(c: Cursor, i: number): number {
    const end = stringEnd(c.chunk, i, this.escaped);
    if (this.key) this.keyBytes(c.chunk, i, end < 0 ? c.chunk.length : end);
    if (end < 0) {
      this.escaped = end === RAN_ON_ESCAPED;
      return -1;
    }
    this.escaped = false;
    this.inString = false;
    if (this.key) {
      this.keyName = watchedKey(this.key);
      this.key = null;
      this.phase = "colon";
    } else if (this.held && this.heldKind === "string" && this.depth === 1) {
      this.release(c, end + 1);
      this.phase = "after";
    }
    return end;
  }

  /** One byte outside strings at the top level (or the bracket that returns to it); false: not an object. */
  private structure(c: Cursor, i: number): boolean {
    const b = c.chunk[i] as number;
    if (this.phase === "start" && !isSpace(b)) {
      this.phase = b === 0x7b ? "key" : "opaque";
      this.depth = b === 0x7b ? 1 : 0;
      return b === 0x7b;
    }
    if (b === QUOTE) {
      this.inString = true;
      if (this.depth === 1 && this.phase === "key") {
        this.key = this.keyBuffer;
        this.key.length = 0;
        this.hasKey = true;
      } else if (this.depth === 1 && this.phase === "value") this.startValue(c, i, "string");
    } else if (isSpace(b)) {
      if (this.held && this.heldKind === "literal" && this.depth === 1) this.endLiteral(c, i);
    } else if (b === 0x7b || b === 0x5b) {
      if (this.depth === 1 && this.phase === "value") this.startValue(c, i, "nested");
      this.depth++;
    } else if (b === 0x7d || b === 0x5d) this.closeBracket(c, i);
    else if (this.depth !== 1) return true;
    else if (b === 0x3a && this.phase === "colon") this.phase = "value";
    else if (b === 0x2c) {
      if (this.held && this.heldKind === "literal") this.release(c, i);
      this.phase = "key";
    } else if (this.phase === "value") this.startValue(c, i, "literal");
    return true;
  }

  private endLiteral(c: Cursor, i: number): void {
    this.release(c, i);
    this.phase = "after";
  }

  private closeBracket(c: Cursor, i: number): void {
    if (this.held && this.heldKind === "literal" && this.depth === 1) this.endLiteral(c, i);
    this.depth--;
    if (this.depth === 1 && this.held && this.heldKind === "nested") {
      this.release(c, i + 1);
      this.phase = "after";
    } else if (this.depth === 0) {
      emit(c, i);
      const extra = this.injection();
      if (extra) c.out.push(extra);
      this.phase = "done";
    }
  }

  /** At the chunk's end: a value still being read is kept (small, capped); the rest goes on. */
  private keepRest(c: Cursor): Uint8Array[] {
    if (!this.held) {
      emit(c, c.chunk.length);
      return c.out;
    }
    const part = c.chunk.slice(c.from);
    this.held.push(part);
    this.heldBytes += part.length;
    if (this.heldBytes > MAX_HELD) {
      c.out.push(...this.held);
      this.held = null;
      this.keyName = "";
    }
    return c.out;
  }

  /**
   * From `from` inside a value nested in the top level, the index of the
   * bracket that closes it (back to the top level), or -1 when the chunk ends
   * first. A tight loop: a body is mostly nested values.
   */
  private skipNested(chunk: Uint8Array, from: number): number {
    let depth = this.depth;
    for (let i = from; i < chunk.length; i++) {
      const b = chunk[i] as number;
      if (b === QUOTE) {
        const end = shortStringEnd(chunk, i + 1) ?? stringEnd(chunk, i + 1, false);
        if (end < 0) {
          this.inString = true;
          this.escaped = end === RAN_ON_ESCAPED;
          this.depth = depth;
          return -1;
        }
        i = end;
      } else if (b === 0x7b || b === 0x5b) depth++;
      else if (b === 0x7d || b === 0x5d) {
        if (depth === 2) {
          this.depth = depth;
          return i;
        }
        depth--;
      }
    }
    this.depth = depth;
    return -1;
  }

  /** What is still held when the body ends (a truncated body: passed on as it came). */
  end(): Uint8Array[] {
    const rest = this.held ?? [];
    this.held = null;
    return rest;
  }

  private keyBytes(chunk: Uint8Array, from: number, to: number): void {
    const key = this.key as number[];
    if (key.length + (to - from) > MAX_KEY_BYTES) {
      key.length = MAX_KEY_BYTES + 1;
      return;
    }
    for (let j = from; j < to; j++) key.push(chunk[j] as number);
  }

  private startValue(c: Cursor, i: number, kind: "string" | "nested" | "literal"): void {
    this.phase = kind === "literal" ? "value" : "after";
    if (this.keyName === "") {
      if (kind === "literal") this.phase = "after";
      return;
    }
    if (this.keyName === "stream_options") this.sawStreamOptions = true;
    emit(c, i);
    this.held = [];
    this.heldBytes = 0;
    this.heldKind = kind;
    if (kind === "literal") this.phase = "after";
  }

  /** Ends the held value at `to` (exclusive) and passes it on, rewritten when asked. */
  private release(c: Cursor, to: number): void {
    const last = c.chunk.subarray(c.from, to);
    // Most values sit in one chunk: read where they are, not copied into a new buffer first.
    const parts = this.held?.length ? [...this.held, last] : null;
    this.held = null;
    c.from = to;
    const raw = dec.decode(parts ? concat(parts) : last);
    const name = this.keyName;
    this.keyName = "";
    const replaced = this.rewrite(name, raw);
    if (replaced !== null) c.out.push(enc.encode(replaced));
    else if (parts) c.out.push(...parts);
    else c.out.push(last);
  }

  private rewrite(name: string, raw: string): string | null {
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return null;
    }
    if (name === "model" && typeof value === "string" && value.length <= 256) {
      this.model = value;
      const other = this.opts.onModel?.(value) ?? null;
      return other === null ? null : JSON.stringify(other);
    }
    if (name === "stream") this.stream = value === true;
    if (name === "stream_options" && this.wantsUsage() && isObject(value) && value.include_usage !== true) {
      // Only once stream:true was seen: a non-streaming request must not carry stream_options.
      this.injected = true;
      return JSON.stringify({ ...value, include_usage: true });
    }
    return null;
  }

  private wantsUsage(): boolean {
    return this.opts.completions && this.stream === true;
  }

  /** At the closing brace: ask for usage when the client streams without stream_options. */
  private injection(): Uint8Array | null {
    if (!this.wantsUsage() || this.sawStreamOptions) return null;
    this.injected = true;
    return this.hasKey ? ASK_USAGE : ASK_USAGE_ALONE;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  let total = 0;
  for (const p of parts) total += p.byteLength;
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    bytes.set(p, at);
    at += p.byteLength;
  }
  return bytes;
}

/** Whether the path is one where the gate may ask for usage (chat or text completions). */
export function isCompletionsPath(rest: string): boolean {
  return /(^|\/)(chat\/)?completions$/.test(rest);
}
