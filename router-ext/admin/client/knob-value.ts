// Knob values between the API and a form control: what a control shows, and
// what a control's text becomes on the wire. Validation itself is the server's
// (the one config schema); this only refuses text that is not even a number.
// shared/index.ts also exports node-only modules (node:crypto), so the browser
// bundle imports this one pure module directly instead of the barrel.
import { formatDuration } from "../../../shared/browser.ts";
import type { KnobView } from "./schemas.ts";

export type Parsed = { ok: true; value: unknown } | { ok: false; error: string };

/** A knob that may be null (its value or default is null, or the server says so). */
export function isNullable(knob: KnobView): boolean {
  return knob.nullable === true || knob.value === null || knob.default === null;
}

/** The text a control shows for a value. */
export function displayValue(knob: KnobView, value: unknown): string {
  if (value === null || value === undefined) return "";
  if (knob.kind === "duration" && typeof value === "number") return formatDuration(value);
  if (knob.kind === "json" || (typeof value === "object" && !Array.isArray(value)))
    return JSON.stringify(value);
  if (Array.isArray(value)) return value.map(String).join(knob.kind === "list" ? "\n" : ", ");
  return String(value);
}

/** One item per line (list knobs hold regexes, which may contain commas); "a, b" only for legacy string kinds. */
function splitList(text: string, separator: RegExp): string[] {
  return text
    .split(separator)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/** The wire value for a control's raw input (the checkbox state for booleans). */
export function parseControl(knob: KnobView, raw: string | boolean): Parsed {
  if (knob.kind === "boolean") return { ok: true, value: raw === true };
  const text = String(raw).trim();
  if (text === "" && isNullable(knob)) return { ok: true, value: null };
  switch (knob.kind) {
    case "number":
    case "integer": {
      const n = Number(text);
      if (text === "" || !Number.isFinite(n))
        return { ok: false, error: `not a number: ${text || "(empty)"}` };
      return { ok: true, value: n };
    }
    case "duration":
      // A bare number is seconds, as in the YAML; anything else goes as text ("90s", "5m").
      return { ok: true, value: /^\d+(\.\d+)?$/.test(text) ? Number(text) : text };
    case "enum":
      return { ok: true, value: text };
    case "list":
      return { ok: true, value: splitList(text, /\n/) };
    case "json":
      try {
        return { ok: true, value: JSON.parse(text) };
      } catch {
        return { ok: false, error: "not valid JSON" };
      }
    case "string":
      if (Array.isArray(knob.value) || Array.isArray(knob.default))
        return { ok: true, value: splitList(text, /,/) };
      return { ok: true, value: text };
  }
}

/** The section a knob belongs to ("thresholds" for "thresholds.top_warn"). */
export function knobSection(path: string): string {
  const dot = path.indexOf(".");
  return dot < 0 ? path : path.slice(0, dot);
}
