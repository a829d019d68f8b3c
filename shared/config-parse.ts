// Config text and values to a Config: YAML layers parsed and merged, every
// layer checked against the one schema (config.ts), issues named by source
// and key path. Pure: the shells read the files (io/config-files.ts).
import { parse as parseYaml } from "yaml";
import { type Config, configSchema } from "./config.ts";
import { issuePath as formatPath } from "./issue-path.ts";
import { isRec } from "./read.ts";

/** One problem in a config source, with the dotted key path it sits at. */
export interface ConfigIssue {
  source: string;
  path: string;
  message: string;
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; issues: ConfigIssue[] };

/** Deep-merges plain objects; arrays and scalars in `over` replace those in `base`. */
export function mergeLayers(base: unknown, over: unknown): unknown {
  if (!isRec(base) || !isRec(over)) return over === undefined ? base : over;
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(over)) out[k] = k in base ? mergeLayers(base[k], v) : v;
  return out;
}

/** Parses one YAML layer into a plain object, or issues. An empty document is an empty layer. */
export function parseYamlLayer(
  text: string,
  source: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; issues: ConfigIssue[] } {
  let value: unknown;
  try {
    value = parseYaml(text, { strict: true, uniqueKeys: true });
  } catch (err) {
    return {
      ok: false,
      issues: [{ source, path: "(root)", message: `invalid YAML: ${(err as Error).message}` }],
    };
  }
  if (value === null || value === undefined) return { ok: true, value: {} };
  if (!isRec(value)) return { ok: false, issues: [{ source, path: "(root)", message: "must be a mapping" }] };
  return { ok: true, value };
}

/** Validates merged layers against the strict schema. */
export function validateConfig(value: unknown, source = "config"): ConfigResult {
  const parsed = configSchema.safeParse(value);
  if (parsed.success) return { ok: true, config: parsed.data };
  return {
    ok: false,
    issues: parsed.error.issues.flatMap((i) =>
      i.code === "unrecognized_keys"
        ? i.keys.map((k) => ({ source, path: formatPath([...i.path, k]), message: "unknown key" }))
        : [{ source, path: formatPath(i.path), message: i.message }],
    ),
  };
}

/**
 * Parses config layers in order (defaults file, local overrides, then any
 * further layers such as admin overrides). Each layer is validated on its own
 * first so an error names the file it came from.
 */
export function parseConfig(
  layers: Array<{ source: string; text: string } | { source: string; value: unknown }>,
): ConfigResult {
  let merged: unknown = {};
  for (const layer of layers) {
    let value: unknown;
    if ("text" in layer) {
      const r = parseYamlLayer(layer.text, layer.source);
      if (!r.ok) return r;
      value = r.value;
    } else {
      value = layer.value;
    }
    const alone = validateConfig(value, layer.source);
    if (!alone.ok) return alone;
    merged = mergeLayers(merged, value);
  }
  return validateConfig(merged, layers.map((l) => l.source).join(" + ") || "defaults");
}

/** Renders issues as lines such as `config/config.local.yaml: thresholds.dup_warn: Too big: ...`. */
export function formatConfigIssues(issues: ConfigIssue[]): string {
  return issues.map((i) => `${i.source}: ${i.path}: ${i.message}`).join("\n");
}
