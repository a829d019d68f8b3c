// Free text opencode shows its user (a session's title, its folder), made safe
// to carry on the wire and show on the admin page: no control, bidi-override
// or zero-width characters (they could forge a line or reorder what is read),
// runs of whitespace collapsed to one space, and a length cap. Nothing else of
// a session's text is ever carried.

/** Controls (C0, DEL, C1), format characters (zero-width, bidi controls, the byte-order mark) and lone surrogates. */
const UNSAFE = /[\p{Cc}\p{Cf}\p{Cs}]/gu;

/** What the wire accepts for such a field: none of the characters displayText removes. */
export const DISPLAY_TEXT_PATTERN = /^[^\p{Cc}\p{Cf}\p{Cs}]*$/u;

/** `text` cleaned and cut to at most `max` UTF-16 units (never half a surrogate pair); null when nothing is left. */
export function displayText(text: unknown, max: number): string | null {
  if (typeof text !== "string") return null;
  const clean = text.replace(UNSAFE, " ").replace(/\s+/g, " ").trim();
  if (clean.length === 0) return null;
  if (clean.length <= max) return clean;
  let cut = clean.slice(0, max);
  if (/[\ud800-\udbff]$/.test(cut)) cut = cut.slice(0, -1);
  return cut.trimEnd();
}
