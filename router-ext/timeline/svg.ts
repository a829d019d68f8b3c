// SVG as plain data, so one drawing serves two outputs: the calibrate HTML
// report serializes it to text (toSvgText), the admin page builds DOM nodes
// from it (no markup strings, which its Trusted Types CSP forbids).

export interface SvgNode {
  tag: string;
  attrs: Record<string, string | number>;
  children: SvgNode[];
  /** Text content (a <title> or <text>), escaped when serialized. */
  text?: string;
}

export const SVG_NS = "http://www.w3.org/2000/svg";

/** An element; `text` becomes its text content. */
export function el(
  tag: string,
  attrs: Record<string, string | number> = {},
  children: SvgNode[] = [],
  text?: string,
): SvgNode {
  return text === undefined ? { tag, attrs, children } : { tag, attrs, children, text };
}

/** HTML/XML-escapes and turns every non-ASCII character into a character reference. */
export function escapeMarkup(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;")
    .replace(/[^\x20-\x7e\n]/gu, (c) => `&#x${(c.codePointAt(0) as number).toString(16)};`);
}

/** The node as markup (ASCII only). */
export function toSvgText(node: SvgNode): string {
  const attrs = Object.entries(node.attrs)
    .map(([k, v]) => ` ${k}="${escapeMarkup(String(v))}"`)
    .join("");
  const inner =
    (node.text === undefined ? "" : escapeMarkup(node.text)) + node.children.map(toSvgText).join("");
  return `<${node.tag}${attrs}>${inner}</${node.tag}>`;
}
