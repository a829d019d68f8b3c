// The corpus recorded from the real opencode binary (test/fixtures/recorded,
// made by test/fixtures/record-corpus.ts): labels honoured, sub-agent linked,
// no machine paths inside.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { loadExports } from "../../router-ext/calibrate/sources.ts";
import { parseConfig, policyFromConfig, replay } from "../../shared/index.ts";

const REPO = join(import.meta.dirname, "..", "..");
const RECORDED = join(REPO, "test", "fixtures", "recorded");

const cfg = parseConfig([
  { source: "config.yaml", text: readFileSync(join(REPO, "config", "config.yaml"), "utf8") },
]);
if (!cfg.ok) throw new Error("defaults do not parse");
const policy = policyFromConfig(cfg.config);

describe("recorded corpus", () => {
  const { sessions, labels, warnings } = loadExports([RECORDED]);
  const results = replay(sessions, policy);
  const byScenario = new Map<string, (typeof results)[number]>();
  const labelsDoc = JSON.parse(readFileSync(join(RECORDED, "labels.json"), "utf8")) as Record<
    string,
    { scenario: string }
  >;
  for (const r of results) byScenario.set(labelsDoc[r.id]?.scenario ?? r.id, r);

  test("loads every file with its label", () => {
    expect(warnings).toEqual([]);
    expect(sessions).toHaveLength(6);
    expect(Object.keys(labels).sort()).toEqual(sessions.map((s) => s.id).sort());
  });

  test("every loop is flagged, every healthy session stays ok", () => {
    for (const r of results) {
      if (labels[r.id] === "loop") expect(r.worst, r.id).not.toBe("ok");
      if (labels[r.id] === "healthy") expect(r.worst, r.id).toBe("ok");
    }
  });

  test("the loops are caught early and named by their repeated target", () => {
    const read = byScenario.get("read-loop");
    expect(read?.calls).toBe(16);
    expect(read?.first_flag_call).toBeLessThanOrEqual(8);
    expect(read?.top_target).toBe("read src/app.js");
    const bash = byScenario.get("bash-retry-loop");
    expect(bash?.calls).toBe(12);
    expect(bash?.first_flag_call).toBeLessThanOrEqual(6);
    expect(bash?.top_target).toBe("bash sh check.sh");
  });

  test("real shapes: the fix lands, sliced reads are not duplicates, the child rolls up", () => {
    expect(byScenario.get("edit-test")?.landed).toBeGreaterThanOrEqual(3);
    expect(byScenario.get("sliced-read")?.dup_share).toBe(0);
    const child = byScenario.get("sub-agent-child");
    expect(child?.parent_id).toBe(byScenario.get("sub-agent")?.id);
    expect(child?.agent).toBe("general");
    expect(child?.landed).toBeGreaterThanOrEqual(1);
  });

  test("no machine paths: the project dir is a placeholder", () => {
    for (const f of readdirSync(RECORDED).filter((n) => n.endsWith(".json"))) {
      const text = readFileSync(join(RECORDED, f), "utf8");
      expect(text, f).not.toMatch(/\/tmp\/|\/home\/|\/root\b|\/work\/|stallguard-oc-/);
      expect([...text].every((c) => c.charCodeAt(0) < 128)).toBe(true);
    }
    expect(sessions.every((s) => s.directory === "/PROJECT_DIR")).toBe(true);
  });
});
