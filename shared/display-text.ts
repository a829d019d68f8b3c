// Free text opencode shows its user (a session's title, its folder), made safe
// to carry on the wire and show on the admin page: no control, bidi-override
// or zero-width characters (they could forge a line or reorder what is read),
// runs of whitespace collapsed to one space, and a length cap. Nothing else of
// a session's text is ever carried.

/** C0 and C1 controls, DEL, zero-width and bidi controls, the byte-order mark. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]/g;

/** What the wire accepts for such a field: none of the characters displayText removes. */
export const DISPLAY_TEXT_PATTERN =
  /^[^\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]*$/;

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
