// The recorded corpus (test/fixtures/recorded) by scenario: the session id
// each scenario was recorded as, read from its labels.json.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");

const labels = JSON.parse(readFileSync(join(RECORDED, "labels.json"), "utf8")) as Record<
  string,
  { label: string; scenario: string }
>;

/** The session id of the recording of `scenario` (a name in test/fixtures/corpus-scenarios.ts). */
export function recordedId(scenario: string): string {
  const id = Object.entries(labels).find(([, e]) => e.scenario === scenario)?.[0];
  if (!id) throw new Error(`no recording of ${scenario}`);
  return id;
}
