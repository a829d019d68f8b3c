// The one set of readers for values of unknown shape (opencode payloads,
// stored records, plugin options). Each never throws and names what it accepts,
// so two callers cannot disagree about what an empty string or NaN means.

export type Rec = Record<string, unknown>;

/** A plain object (not null, not an array). */
export function isRec(v: unknown): v is Rec {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The value as a plain object; anything else reads as an empty one. */
export function obj(v: unknown): Rec {
  return isRec(v) ? v : {};
}

/** Any string, the empty one included; undefined for anything else. */
export function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

/** A non-empty string (an id, a name); undefined for "" and anything else. */
export function text(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

/** A finite number; undefined for NaN, the infinities and anything else. */
export function num(v: unknown): number | undefined {
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}
