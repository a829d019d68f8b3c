// Labels for the sweep: {session_id: "loop" | "healthy" | "unclear"}, or the
// corpus form {session_id: {label, ...notes}} that labels.json files use.
import { z } from "zod";
import type { Label } from "../../shared/index.ts";

export type Labels = Record<string, Label>;

const label = z.enum(["loop", "healthy", "unclear"]);
const labelsSchema = z.record(z.string().min(1), z.union([label, z.looseObject({ label })]));

/** Parses a labels document; throws with the key path of the first bad entry. */
export function parseLabels(doc: unknown): Labels {
  const r = labelsSchema.safeParse(doc);
  if (!r.success) {
    const issue = r.error.issues[0];
    throw new Error(`bad labels at ${issue?.path.join(".") || "(root)"}: ${issue?.message ?? "invalid"}`);
  }
  const out: Labels = {};
  for (const [id, v] of Object.entries(r.data)) out[id] = typeof v === "string" ? v : v.label;
  return out;
}

/** Later labels win. */
export function mergeLabels(base: Labels, over: Labels): Labels {
  return { ...base, ...over };
}

export function labelCounts(labels: Labels, ids: readonly string[]): Record<Label, number> {
  const counts: Record<Label, number> = { loop: 0, healthy: 0, unclear: 0 };
  for (const id of ids) {
    const l = labels[id];
    if (l) counts[l]++;
  }
  return counts;
}
