import type { Config, Thresholds } from "./config.ts";

/** What the judge needs from the config, compiled once. */
export interface Policy {
  thresholds: Thresholds;
  readOnlyAgents: ReadonlySet<string>;
  testPatterns: readonly RegExp[];
  continuationMarkers: readonly string[];
}

export function policyFromConfig(config: Config, readOnlyAgents?: readonly string[]): Policy {
  return {
    thresholds: config.thresholds,
    readOnlyAgents: new Set(readOnlyAgents ?? config.progress.read_only_agents),
    testPatterns: config.progress.test_commands.map((s) => new RegExp(s)),
    continuationMarkers: config.progress.continuation_markers,
  };
}

/** Slugs already made: an agent name is slugged on every observation, and a session has few names. */
const slugs = new Map<string, string>();
const MAX_SLUGS = 256;

/** Lowercase [a-z0-9_-], at most 64 characters: the form agents are compared in. */
export function slugAgent(name: unknown): string {
  const known = typeof name === "string" ? slugs.get(name) : undefined;
  if (known !== undefined) return known;
  const slug =
    String(name ?? "")
      .toLowerCase()
      .replace(/[^a-z0-9_-]+/g, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 64) || "unknown";
  if (typeof name === "string" && name.length <= 200) {
    if (slugs.size >= MAX_SLUGS) slugs.clear();
    slugs.set(name, slug);
  }
  return slug;
}
