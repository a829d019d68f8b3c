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
const VOLATILE: ReadonlyArray<[RegExp, string]> = [
  [/\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?/g, "<ts>"],
  [/\b\d{1,2}:\d{2}:\d{2}(?:[.,]\d+)?\b/g, "<t>"],
  [/\b\d+(?:\.\d+)?\s?(?:ms|us|ns|s|sec|secs|seconds?|min|mins|minutes?)\b/g, "<d>"],
  [/\b0x[0-9a-fA-F]+\b/g, "0x"],
  [/\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b/g, "<id>"],
  [/\b(?:ba|z)?sh: line \d+:/g, "sh: line N:"],
  [/\bpid[ =:]?\d+\b/gi, "pid"],
];

export function maskVolatile(text: string): string {
  let out = text;
  for (const [re, to] of VOLATILE) out = out.replace(re, to);
  return out;
}

/** The hash of one answer: status, exit code and the masked text. */
export function outcomeHash(status: string, exit: number | null, text: string): string {
  return sha256(`${status}\u0000${exit ?? ""}\u0000${maskVolatile(text)}`).slice(0, 32);
}
