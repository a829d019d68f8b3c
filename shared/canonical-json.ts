/**
 * Nesting followed this deep; an object or array deeper is written as DEEPER.
 * Tool arguments nest a few levels; a hostile or broken value thousands deep
 * would overflow the stack here (and in JSON.stringify) in the user's opencode.
 */
const MAX_DEPTH = 64;
const DEEPER = "<deeper>";

/** JSON with object keys sorted at every depth, so equal values hash equally. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value, 0)) ?? "null";
}

function sortKeys(value: unknown, depth: number): unknown {
  if (value === null || typeof value !== "object") return value;
  if (depth >= MAX_DEPTH) return DEEPER;
  if (Array.isArray(value)) return value.map((v) => sortKeys(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const key of sortedKeys(value))
    out[key] = sortKeys((value as Record<string, unknown>)[key], depth + 1);
  return out;
}

/**
 * Object.keys(value).sort(): a few keys (most tool arguments have one to four)
 * by insertion, in place, since Array.prototype.sort allocates its merge state
 * on every call (a tenth of what the opencode.db loader allocated). The same
 * order: code unit order, as sort() without a comparator orders strings.
 */
function sortedKeys(value: object): string[] {
  const keys = Object.keys(value);
  if (keys.length > 8) return keys.sort();
  for (let i = 1; i < keys.length; i++) {
    const key = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > key) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = key;
  }
  return keys;
}
