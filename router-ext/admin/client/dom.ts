// The page's only way to build DOM: elements from tag names, attributes set
// with setAttribute and text as text nodes. No innerHTML anywhere, so data from
// the API (agent names, targets, reports) can never become markup.

export type Child = Node | string | number | null | undefined | false;
export type Attrs = Record<string, string | number | boolean | null | undefined>;

/**
 * Creates an element. Attribute names starting with "on" are refused: handlers
 * are attached with addEventListener, never from strings.
 *
 * @example h("td", { class: "num" }, 42)
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (/^on/i.test(name)) throw new Error(`refusing handler attribute ${name}`);
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Appends children; strings and numbers become text nodes. */
export function append(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  append(parent, children);
}

/** The element with this id, or an error naming it (the page skeleton is fixed). */
export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`admin page: missing #${id}`);
  return el as T;
}

/** The problems met reading an API answer, as a list; nothing when there are none. */
export function problemList(problems: string[]): HTMLUListElement | null {
  return problems.length ? h("ul", { class: "err" }, ...problems.map((p) => h("li", {}, p))) : null;
}

/**
 * The columns whose cells are numbers (class "num") in the first row that has
 * one cell per column: their headers are right-aligned like the numbers.
 */
export function numericColumns(cols: number, rows: readonly HTMLElement[]): Set<number> {
  const full = rows.find((r) => r.children.length === cols);
  const out = new Set<number>();
  if (!full) return out;
  for (let i = 0; i < cols; i++) if (full.children[i]?.classList.contains("num")) out.add(i);
  return out;
}

/** A table with a header row; `empty` fills one row when there are no rows. */
export function dataTable(cls: string, cols: string[], rows: HTMLElement[], empty: string): HTMLTableElement {
  const num = numericColumns(cols.length, rows);
  return h(
    "table",
    { class: cls },
    h(
      "thead",
      {},
      h("tr", {}, ...cols.map((c, i) => h("th", { scope: "col", class: num.has(i) ? "num" : null }, c))),
    ),
    h(
      "tbody",
      {},
      ...(rows.length ? rows : [h("tr", {}, h("td", { colspan: cols.length, class: "dim" }, empty))]),
    ),
  );
}

/** A button wired to an async action; disabled while it runs. */
export function button(
  label: string,
  action: () => Promise<void> | void,
  attrs: Attrs = {},
): HTMLButtonElement {
  const b = h("button", { type: "button", ...attrs }, label);
  b.addEventListener("click", async () => {
    b.disabled = true;
    try {
      await action();
    } finally {
      if (b.isConnected) b.disabled = attrs.disabled === true;
    }
  });
  return b;
}
