/**
 * Reading token usage out of upstream answers without keeping the answer.
 *
 * Streaming: an SSE line splitter that holds at most one partial line (capped)
 * and parses only `data:` lines that mention "usage". Non-streaming: the JSON
 * body is collected up to a cap, parsed once for its usage, then dropped.
 */

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  cached_tokens: number | null;
}

/** Longest partial SSE line we hold while looking for the usage chunk. */
export const MAX_LINE_CHARS = 1 << 20;

function count(v: unknown): number | null {
  return typeof v === "number" && Number.isFinite(v) && v >= 0 ? Math.floor(v) : null;
}

/**
 * The usage object of an OpenAI-shaped completion or chunk, null when absent.
 * Cached tokens come from `prompt_tokens_details.cached_tokens` (OpenAI),
 * `prompt_cache_hit_tokens` (DeepSeek) or `cache_read_input_tokens`.
 */
export function usageFrom(payload: unknown): Usage | null {
  if (typeof payload !== "object" || payload === null) return null;
  const u = (payload as { usage?: unknown }).usage;
  if (typeof u !== "object" || u === null) return null;
  const o = u as Record<string, unknown>;
  const prompt = count(o.prompt_tokens);
  const completion = count(o.completion_tokens);
  if (prompt === null && completion === null) return null;
  const details = o.prompt_tokens_details;
  const cached =
    (typeof details === "object" && details !== null
      ? count((details as Record<string, unknown>).cached_tokens)
      : null) ??
    count(o.prompt_cache_hit_tokens) ??
    count(o.cache_read_input_tokens);
  return { prompt_tokens: prompt ?? 0, completion_tokens: completion ?? 0, cached_tokens: cached };
}

/** The `model` string of an upstream answer, if any (used when the request named none). */
export function modelFrom(payload: unknown): string | null {
  if (typeof payload !== "object" || payload === null) return null;
  const m = (payload as { model?: unknown }).model;
  return typeof m === "string" && m.length > 0 && m.length <= 200 ? m : null;
}

/** A chunk that carries only usage (`choices: []`), as sent for stream_options.include_usage. */
export function isUsageOnlyChunk(payload: unknown): boolean {
  if (typeof payload !== "object" || payload === null) return false;
  const p = payload as { choices?: unknown; usage?: unknown };
  return (
    Array.isArray(p.choices) && p.choices.length === 0 && typeof p.usage === "object" && p.usage !== null
  );
}

export interface SseLine {
  /** The line without its terminator. */
  text: string;
  /** The terminator as received ("\n", "\r\n" or "\r"); "" for an overlong piece passed on early. */
  eol: string;
}

/**
 * Splits a decoded SSE text stream into lines. Holds only the current partial
 * line; a line longer than maxChars is handed out in pieces marked `eol: ""`
 * (and never parsed), so memory stays bounded whatever the upstream sends.
 */
export class LineSplitter {
  private partial = "";
  private overlong = false;
  private pendingCR = false;

  constructor(private readonly maxChars = MAX_LINE_CHARS) {}

  /** Feeds text; returns the complete lines (and overlong pieces) found. */
  push(text: string): Array<SseLine & { parseable: boolean }> {
    const out: Array<SseLine & { parseable: boolean }> = [];
    let start = 0;
    let i = 0;
    if (this.pendingCR) {
      // A "\r" ended the previous piece: a "\n" right after belongs to it.
      this.pendingCR = false;
      if (text.startsWith("\n")) {
        // The line was already handed out with eol "\r"; pass the "\n" on as an empty piece.
        out.push({ text: "", eol: "\n", parseable: false });
        start = i = 1;
      }
    }
    for (; i < text.length; i++) {
      const ch = text.charCodeAt(i);
      if (ch !== 10 && ch !== 13) continue;
      let eol = ch === 10 ? "\n" : "\r";
      if (ch === 13) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 10) eol = "\r\n";
        } else {
          this.pendingCR = true;
        }
      }
      const line = this.partial + text.slice(start, i);
      out.push({ text: line, eol, parseable: !this.overlong });
      this.partial = "";
      this.overlong = false;
      i += eol.length - 1;
      start = i + 1;
    }
    const rest = text.slice(start);
    if (this.partial.length + rest.length > this.maxChars) {
      out.push({ text: this.partial + rest, eol: "", parseable: false });
      this.partial = "";
      this.overlong = true;
    } else {
      this.partial += rest;
    }
    return out;
  }

  /** What is left at the end of the stream (a last line without terminator). */
  flush(): (SseLine & { parseable: boolean }) | null {
    if (!this.partial) return null;
    const line = { text: this.partial, eol: "", parseable: !this.overlong };
    this.partial = "";
    return line;
  }
}

/** The JSON of a `data:` line, or undefined when it is not one / not JSON / not about usage. */
export function usageLinePayload(line: string): unknown {
  if (!line.startsWith("data:")) return undefined;
  if (!line.includes('"usage"')) return undefined;
  const data = line.slice(5).trim();
  if (!data.startsWith("{")) return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/** The last non-null usage seen wins (some providers repeat it with growing counts). */
export class UsageTracker {
  usage: Usage | null = null;
  model: string | null = null;

  see(payload: unknown): void {
    const u = usageFrom(payload);
    if (u) this.usage = u;
    const m = modelFrom(payload);
    if (m) this.model = m;
  }
}
