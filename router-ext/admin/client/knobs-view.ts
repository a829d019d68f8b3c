// Every knob the API lists, grouped by section, with a control for its kind,
// its default and a "changed" mark when its value is not the default; a change
// is PUT at once and the server's 400 message is shown beside the control. The
// knobs deliberately left out of the page are listed with their reason.
import type { Api } from "./api.ts";
import { button, h, problemList, replace } from "./dom.ts";
import { displayValue, isNullable, knobSection, parseControl } from "./knob-value.ts";
import type { ExcludedKnob, KnobView } from "./schemas.ts";

type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

function controlFor(knob: KnobView): Control {
  const id = `knob-${knob.path}`;
  switch (knob.kind) {
    case "boolean": {
      const c = h("input", { type: "checkbox", id });
      c.checked = knob.value === true;
      return c;
    }
    case "enum": {
      const options = knob.options ?? [];
      const values = options.includes(String(knob.value)) ? options : [String(knob.value), ...options];
      const c = h("select", { id }, ...values.map((o) => h("option", { value: o }, o)));
      c.value = String(knob.value);
      return c;
    }
    case "number":
    case "integer": {
      const c = h("input", {
        type: "number",
        id,
        min: knob.min,
        max: knob.max,
        step: knob.kind === "integer" ? 1 : "any",
        placeholder: isNullable(knob) ? "(none)" : undefined,
      });
      c.value = displayValue(knob, knob.value);
      return c;
    }
    case "list":
    case "json": {
      const c = h("textarea", {
        id,
        rows: Math.min(8, Math.max(2, displayValue(knob, knob.value).split("\n").length)),
        spellcheck: "false",
        placeholder: knob.kind === "list" ? "one per line" : "JSON",
      });
      c.value = displayValue(knob, knob.value);
      return c;
    }
    default: {
      const c = h("input", {
        type: "text",
        id,
        spellcheck: "false",
        autocomplete: "off",
        placeholder: knob.kind === "duration" ? "e.g. 90s, 5m, 1h" : isNullable(knob) ? "(none)" : undefined,
      });
      c.value = displayValue(knob, knob.value);
      return c;
    }
  }
}

function rawOf(c: Control): string | boolean {
  return c instanceof HTMLInputElement && c.type === "checkbox" ? c.checked : c.value;
}

function setControl(c: Control, knob: KnobView, value: unknown): void {
  if (c instanceof HTMLInputElement && c.type === "checkbox") c.checked = value === true;
  else c.value = displayValue(knob, value);
}

function rangeText(k: KnobView): string {
  if (k.min !== undefined && k.max !== undefined) return `${k.min}..${k.max}`;
  if (k.min !== undefined) return `>= ${k.min}`;
  if (k.max !== undefined) return `<= ${k.max}`;
  return "";
}

function defaultText(k: KnobView): string {
  if (Array.isArray(k.default)) {
    if (k.default.length === 0) return "(empty list)";
    if (k.default.length > 3) return `${k.default.length} items`;
    return k.default.map(String).join(", ");
  }
  return displayValue(k, k.default) || "(none)";
}

/** The value differs from the shipped default (from a config file or this page). */
export function isChanged(knob: Pick<KnobView, "value" | "default">): boolean {
  return JSON.stringify(knob.value) !== JSON.stringify(knob.default);
}

function knobRow(knob: KnobView, api: Api): HTMLTableRowElement {
  const control = controlFor(knob);
  const status = h("span", { class: "knob-status", role: "status" });
  const errorBox = h("span", { class: "err knob-error", role: "alert" });
  const mark = h(
    "span",
    { class: "dim", title: "set from this page (stored in the database)" },
    " (set here)",
  );
  mark.hidden = knob.overridden !== true;
  const changed = h("span", { class: "warn changed", title: "differs from the default" }, " changed");
  const showChanged = () => {
    changed.hidden = !isChanged(knob);
  };
  showChanged();
  // After a PUT or DELETE: the value the router answers with is the one in force.
  const applied = (res: unknown, fallback: unknown, overridden: boolean) => {
    const r = res as { value?: unknown } | null;
    knob.value = r && "value" in r ? r.value : fallback;
    knob.overridden = overridden;
    mark.hidden = !overridden;
    showChanged();
    setControl(control, knob, knob.value);
  };
  const save = async (raw: string | boolean) => {
    const parsed = parseControl(knob, raw);
    status.textContent = "";
    errorBox.textContent = "";
    control.removeAttribute("aria-invalid");
    if (!parsed.ok) {
      errorBox.textContent = parsed.error;
      control.setAttribute("aria-invalid", "true");
      return;
    }
    status.textContent = "saving";
    try {
      applied(
        await api.send("PUT", "/api/knobs", { path: knob.path, value: parsed.value }),
        parsed.value,
        true,
      );
      status.textContent = "saved";
    } catch (err) {
      status.textContent = "";
      errorBox.textContent = (err as Error).message;
      control.setAttribute("aria-invalid", "true");
    }
  };
  control.addEventListener("change", () => void save(rawOf(control)));
  const reset = button(
    "reset",
    async () => {
      status.textContent = "";
      errorBox.textContent = "";
      try {
        applied(await api.send("DELETE", `/api/knobs/${encodeURIComponent(knob.path)}`), knob.default, false);
        control.removeAttribute("aria-invalid");
        status.textContent = "reset";
      } catch (err) {
        errorBox.textContent = (err as Error).message;
      }
    },
    { class: "small", title: "drop the value set here: back to the config files" },
  );
  return h(
    "tr",
    { "data-knob": knob.path, "data-kind": knob.kind },
    h("td", {}, h("label", { for: control.id }, knob.path), changed, mark),
    h("td", {}, control, " ", reset, " ", status, " ", errorBox),
    h("td", { class: "dim" }, knob.kind, rangeText(knob) ? ` ${rangeText(knob)}` : ""),
    h(
      "td",
      { class: "dim", title: Array.isArray(knob.default) ? knob.default.join("\n") : null },
      defaultText(knob),
    ),
    h("td", { class: "desc" }, knob.description),
  );
}

/** Renders the knob tables (grouped by section) and the excluded list into `root`. */
export function renderKnobs(
  root: HTMLElement,
  knobs: KnobView[],
  excluded: ExcludedKnob[],
  problems: string[],
  api: Api,
): void {
  const sections = new Map<string, KnobView[]>();
  for (const k of knobs) {
    const s = knobSection(k.path);
    const list = sections.get(s);
    if (list) list.push(k);
    else sections.set(s, [k]);
  }
  const tables = [...sections].map(([name, list]) =>
    h(
      "table",
      { class: "knobs", "data-section": name },
      h("caption", {}, name),
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          ...["knob", "value", "kind", "default", "description"].map((c) => h("th", { scope: "col" }, c)),
        ),
      ),
      h("tbody", {}, ...list.map((k) => knobRow(k, api))),
    ),
  );
  replace(
    root,
    problemList(problems),
    knobs.length ? null : h("div", { class: "dim" }, "no knobs reported"),
    ...tables,
    h("h3", {}, "Not in this page"),
    excluded.length
      ? h(
          "table",
          { class: "excluded" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "knob"), h("th", { scope: "col" }, "why"))),
          h(
            "tbody",
            {},
            ...excluded.map((e) =>
              h("tr", { "data-excluded": e.path }, h("td", {}, e.path), h("td", { class: "desc" }, e.why)),
            ),
          ),
        )
      : h("div", { class: "dim" }, "none"),
  );
}
