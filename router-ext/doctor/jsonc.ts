// opencode's config files are JSONC: JSON plus // and /* */ comments and
// trailing commas. That is all this reader adds to JSON.parse, skipping
// strings so a URL's "//" is left alone. (No JSONC parser is among the
// project's dependencies, and these two rules are the whole difference.)

/** The text with comments blanked and trailing commas dropped, outside strings. */
export function stripJsonc(text: string): string {
  let out = "";
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i] as string;
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === "\\" ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < n && text[i] !== "\n") i++;
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? n : end + 2;
      out += " ";
    } else if (c === ",") {
      let j = i + 1;
      while (j < n && /\s/.test(text[j] as string)) j++;
      if (text[j] !== "}" && text[j] !== "]") out += c;
      i++;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** Parses JSONC; throws SyntaxError like JSON.parse. */
export function parseJsonc(text: string): unknown {
  return JSON.parse(stripJsonc(text));
}
