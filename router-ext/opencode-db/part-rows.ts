// Which of a session's part rows the reader parses, and in what order: two
// decisions the reader (router-ext/opencode-db/reader.ts) once asked SQLite
// for. SQLite ran the type test's string functions again for every reference
// to the column and sorted every row of a session in a temporary b-tree; here
// the test is a few indexOf calls on the row text and the order is usually
// already right. Together they made calibrate --db's loader about 5% faster
// (bench/core-replay.ts); either one alone did not show.

/**
 * Part types the stored adapter never reads (it reads text, compaction and
 * tool parts): most of opencode's parts are the step markers around each
 * model step.
 */
export const UNREAD_PART_TYPES: ReadonlySet<string> = new Set([
  "step-start",
  "step-finish",
  "reasoning",
  "patch",
  "snapshot",
  "file",
  "agent",
  "subtask",
  "retry",
]);

const TYPE_KEY = '"type":"';

/**
 * Whether a part row is left unparsed: its data holds `"type":"<an unread
 * type>"` as its only "type" key and no \u escape (so no key is spelled
 * another way). In JSON a `"` inside a string is escaped, so that text is a
 * key and its value, whatever the key order (opencode writes
 * `{"snapshot":...,"type":"step-start"}`). Any other row is parsed and judged;
 * a row left out is not checked either, so a broken one is not counted as
 * malformed. Data that is not text (a blob, a number) is read and counted
 * malformed: the SQL test before this one never matched it either.
 */
export function unreadPart(text: unknown): boolean {
  if (typeof text !== "string") return false;
  const at = text.indexOf(TYPE_KEY);
  if (at < 0) return false;
  const start = at + TYPE_KEY.length;
  const end = text.indexOf('"', start);
  if (end < 0 || !UNREAD_PART_TYPES.has(text.slice(start, end))) return false;
  return text.indexOf('"type"', at + 6) < 0 && text.indexOf("\\u") < 0;
}

/**
 * Orders a message's part rows, kept as flat [id, data, id, data, ...] pairs
 * (ids are strings) in the order the database gave them, by id in SQLite's
 * order for text (UTF-8 bytes, which is code point order); rows with equal
 * ids keep their order. Rows come in id order unless parts were written out of order, so the
 * usual cost is one pass that finds nothing to do.
 */
export function inIdOrder(pairs: unknown[]): unknown[] {
  for (let i = 2; i < pairs.length; i += 2) {
    if (compareIds(pairs[i - 2] as string, pairs[i] as string) > 0) return sortPairs(pairs);
  }
  return pairs;
}

function sortPairs(pairs: unknown[]): unknown[] {
  const rows: Array<[string, unknown]> = [];
  for (let i = 0; i < pairs.length; i += 2) rows.push([pairs[i] as string, pairs[i + 1]]);
  rows.sort((a, b) => compareIds(a[0], b[0]));
  return rows.flat();
}

/**
 * SQLite's BINARY order of two ids: byte order of their UTF-8. JavaScript
 * compares UTF-16 code units, which differ from code points only where a
 * surrogate (a character past U+FFFF) meets U+E000 to U+FFFF: the units are
 * shifted so surrogates sort above them.
 */
export function compareIds(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  if (unit >= 0xe000) return unit - 0x800;
  return unit;
}
