import { describe, expect, it } from "vitest";
import { configSchema, formatDuration } from "../../shared/index.ts";
import {
  EXCLUDED,
  excludedLeaves,
  getPath,
  isExcluded,
  KNOB_SPECS,
  knobViews,
  schemaLeaves,
} from "./knobs.ts";

/** Leaf paths of the parsed defaults, walked as plain data (independent of the schema walker). */
function defaultLeaves(value: unknown, path = ""): string[] {
  if (typeof value === "object" && value !== null && !Array.isArray(value) && Object.keys(value).length > 0) {
    // Records default to {}: an empty object is itself a leaf.
    return Object.entries(value).flatMap(([k, v]) => defaultLeaves(v, path ? `${path}.${k}` : k));
  }
  return [path];
}

const defaults = configSchema.parse({});

describe("knobs", () => {
  it("covers every schema leaf exactly once: a knob or excluded with a reason", () => {
    const knobs = new Set(KNOB_SPECS.map((k) => k.path));
    const excluded = new Set(excludedLeaves().map((e) => e.path));
    const leaves = defaultLeaves(defaults);
    expect(leaves.length).toBeGreaterThan(50);
    for (const path of leaves) {
      expect(knobs.has(path) !== excluded.has(path), `${path}: knob xor excluded`).toBe(true);
    }
    expect(new Set([...knobs, ...excluded])).toEqual(new Set(leaves));
    for (const e of excludedLeaves()) expect(e.why.length, e.path).toBeGreaterThan(10);
  });

  it("names only real paths in EXCLUDED", () => {
    const leaves = schemaLeaves().map((k) => k.path);
    for (const e of EXCLUDED) {
      const hit = e.path.endsWith(".*")
        ? leaves.some((p) => p.startsWith(e.path.slice(0, -1)))
        : leaves.includes(e.path);
      expect(hit, e.path).toBe(true);
    }
  });

  it("describes every knob and derives kinds and bounds from the schema", () => {
    for (const k of KNOB_SPECS) expect(k.description, k.path).not.toBe("");
    const byPath = new Map(KNOB_SPECS.map((k) => [k.path, k]));
    expect(byPath.get("thresholds.dup_warn")).toMatchObject({ kind: "number", min: 0, max: 1 });
    expect(byPath.get("thresholds.window")).toMatchObject({ kind: "integer", min: 10, max: 1000 });
    expect(byPath.get("progress.mode")).toMatchObject({
      kind: "enum",
      options: ["warn", "auto_compact", "auto_limit_context", "auto_recover"],
    });
    expect(byPath.get("progress.heartbeat")?.kind).toBe("duration");
    expect(byPath.get("watchdog.enabled")?.kind).toBe("boolean");
    expect(byPath.get("watchdog.model")).toMatchObject({ kind: "string", nullable: true });
    expect(byPath.get("progress.read_only_agents")?.kind).toBe("list");
    expect(isExcluded("plugin.timeout")).toBe(true);
    expect(isExcluded("server.port")).toBe(true);
  });

  it("shows defaults and durations in the form PUT accepts", () => {
    const views = knobViews(defaults, new Set(["thresholds.dup_warn"]));
    const hb = views.find((v) => v.path === "progress.heartbeat");
    expect(hb).toMatchObject({ value: formatDuration(defaults.progress.heartbeat), overridden: false });
    const dup = views.find((v) => v.path === "thresholds.dup_warn");
    expect(dup).toMatchObject({ value: getPath(defaults, "thresholds.dup_warn"), overridden: true });
    for (const v of views) {
      if (v.kind !== "duration") expect(v.default, v.path).toEqual(getPath(defaults, v.path));
    }
  });
});
