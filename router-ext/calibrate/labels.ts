// Labels for the sweep and the audit: {session_id: "loop" | "healthy" |
// "unclear"}, or the corpus form {session_id: {label, note, ...}} that
// labels.json files use. One labels document is one labelled set.
import { z } from "zod";
import type { Label } from "../../shared/index.ts";

export type Labels = Record<string, Label>;

/** One labels document: an export directory's labels.json or the --labels file. */
export interface LabelSet {
  /** The path it was read from, as given. */
  name: string;
  labels: Labels;
  /** Per loop, the 1-based call where the labelled loop starts, when its note gives "calls X-Y". */
  loopStarts: Record<string, number>;
}

const label = z.enum(["loop", "healthy", "unclear"]);
const labelsSchema = z.record(z.string().min(1), z.union([label, z.looseObject({ label })]));

// The corpus notes open with the loop's call range: "calls 45-134: the identical ...".
const CALL_RANGE = /^calls (\d+)\s*-\s*(\d+)\b/;

function parsed(doc: unknown) {
  const r = labelsSchema.safeParse(doc);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`bad labels at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  return r.data;
}

/** Parses a labels document; throws with the key path of the first bad entry. */
export function parseLabels(doc: unknown): Labels {
  return parseLabelSet("", doc).labels;
}

/** A labels document as a set: the labels plus each loop's labelled start. */
export function parseLabelSet(name: string, doc: unknown): LabelSet {
  const labels: Labels = {};
  const loopStarts: Record<string, number> = {};
  for (const [id, v] of Object.entries(parsed(doc))) {
    if (typeof v === "string") {
      labels[id] = v;
      continue;
    }
    labels[id] = v.label;
    const m = typeof v.note === "string" ? CALL_RANGE.exec(v.note) : null;
    if (v.label === "loop" && m) loopStarts[id] = Number(m[1]);
  }
  return { name, labels, loopStarts };
}

/** Later labels win. */
export function mergeLabels(base: Labels, over: Labels): Labels {
  return { ...base, ...over };
}

/** Every set's labels in one map, later sets winning. */
export function mergeSets(sets: readonly LabelSet[]): Labels {
  return sets.reduce<Labels>((all, s) => mergeLabels(all, s.labels), {});
}

export function labelCounts(labels: Labels, ids: readonly string[]): Record<Label, number> {
  const counts: Record<Label, number> = { loop: 0, healthy: 0, unclear: 0 };
  for (const id of ids) {
    const l = labels[id];
    if (l) counts[l]++;
  }
  return counts;
}
