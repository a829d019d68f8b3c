// What a tool answered, reduced to a short hash that says "the same result as
// before" across reruns. Only the hash leaves this function: the text itself is
// never kept, sent or stored.
import { sha256 } from "./hash.ts";

/**
 * Parts of an answer that change between identical runs without telling the
 * agent anything new: timestamps, durations, memory addresses, ids and the
 * shell's own line counter. Counters an agent may be waiting on (3/10, 45%,
 * "5 passed") are kept, so polling that sees them move is not a repeat.
 */
const VOLATILE: ReadonlyArray<{ needs: string | null; re: RegExp; to: string }> = [
  {
    needs: ":",
    re: /\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?|\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g,
    to: "<t>",
  },
  { needs: null, re: /\d+(?:\.\d+)?\s?(?:ms|us|ns|s|sec|secs|seconds?|min|mins|minutes?)\b/g, to: "<d>" },
  { needs: "0x", re: /\b0x[0-9a-fA-F]+\b/g, to: "0x" },
  // ids: 8+ hex characters with a digit among them (a plain word is left alone; see maskVolatile).
  // One \b before the alternation, not one per branch: the same matches, scanned in about half the time.
  { needs: null, re: /\b(?:\d[0-9a-f]{7,}|[a-f]+\d[0-9a-f]*)\b/g, to: "<id>" },
  { needs: "sh: line", re: /\b(?:ba|z)?sh: line \d+:/g, to: "sh: line N:" },
];

/** An id-like match is masked from 8 characters on (hoisted: not a closure per call). */
const maskId = (m: string): string => (m.length < 8 ? m : "<id>");

/** Every rule above matches a digit: a text without one has nothing to mask. */
const DIGIT = /\d/;

/** The text with its volatile parts masked; a rule is skipped when the text cannot match it. */
export function maskVolatile(text: string): string {
  if (!DIGIT.test(text)) return text;
  let out = text;
  for (const { needs, re, to } of VOLATILE) {
    if (needs !== null && !out.includes(needs)) continue;
    out = to === "<id>" ? out.replace(re, maskId) : out.replace(re, to);
  }
  return out;
}

/** Masking runs on the first and last lines only (about this many characters each): that is where
 * durations, summaries and shell errors sit, and it keeps the cost flat for a long read. */
const EDGE = 1024;
/** At most this much of the middle is hashed, from each end (a long output is not hashed whole). */
const MIDDLE = 8 * 1024;

/** Splits a text at line ends near `EDGE` from each side, so a one-character change in a line stays in it. */
function edges(text: string): [string, string, string] {
  const n = text.length;
  if (n <= 2 * EDGE) return [text, "", ""];
  const headEnd = text.indexOf("\n", EDGE);
  const tailStart = text.lastIndexOf("\n", n - EDGE);
  if (headEnd < 0 || tailStart <= headEnd) return [text, "", ""];
  let middle = text.slice(headEnd, tailStart);
  if (middle.length > 2 * MIDDLE)
    middle = `${middle.slice(0, MIDDLE)}\u0000${middle.length}\u0000${middle.slice(-MIDDLE)}`;
  return [text.slice(0, headEnd), middle, text.slice(tailStart)];
}

/**
 * An edge longer than this (an answer on one long line: a minified page,
 * one-line JSON) is hashed as it is: masked, 5 MB held opencode's event loop
 * for a quarter of a second. Cutting it instead would move the cut with every
 * changed length before it, so a changed duration would still differ.
 */
const MASK_MAX = 256 * 1024;

/** The text with its volatile parts masked, or as it is past MASK_MAX. */
function masked(text: string): string {
  return text.length > MASK_MAX ? text : maskVolatile(text);
}

/** The hash of one answer: status, exit code and the text with its volatile parts masked. */
export function outcomeHash(status: string, exit: number | null, text: string): string {
  const [head, middle, tail] = edges(text);
  const body =
    middle === "" && tail === "" ? masked(head) : `${masked(head)}\u0000${middle}\u0000${masked(tail)}`;
  return sha256(`${status}\u0000${exit ?? ""}\u0000${body}`).slice(0, 32);
}
