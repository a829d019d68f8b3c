// The second opinion against a real Ollama when one is running on this
// machine (verification.base_url, default 127.0.0.1:11434); skipped otherwise,
// with the reason printed. The fake-model tests live in watchdog-tick and the
// watchdog unit tests.
import { describe, expect, test } from "vitest";
import { askSecondOpinion } from "../../router-ext/watchdog/index.ts";
import { parseConfig, watchdogModel } from "../../shared/index.ts";

const parsed = parseConfig([]);
if (!parsed.ok) throw new Error("defaults must parse");
const config = parsed.config;
const base = process.env.STALLGUARD_OLLAMA_URL ?? config.verification.base_url;

async function installedModels(): Promise<string[] | null> {
  try {
    const res = await fetch(`${base}/api/tags`, { signal: AbortSignal.timeout(1500) });
    if (!res.ok) return null;
    const json = (await res.json()) as { models?: Array<{ name?: string }> };
    return (json.models ?? []).map((m) => m.name ?? "").filter(Boolean);
  } catch {
    return null;
  }
}

const models = await installedModels();
const wanted = watchdogModel(config);
const model = models?.includes(wanted) ? wanted : models?.[0];
const skipWhy = models === null ? `no Ollama at ${base}` : model ? null : `Ollama at ${base} has no models`;
if (skipWhy) console.log(`[skip] real Ollama second opinion: ${skipWhy}`);

describe("second opinion from a real local model", () => {
  test.skipIf(skipWhy !== null)("answers yes or no on a loop digest", async () => {
    const digest = [
      "agent: build",
      "deterministic verdict: looping (repeat_target)",
      "tool calls: 26, landed changes: 0, turns since last landed change: 26",
      "most repeated: read notes.md x26",
      "last 5 calls (tool target exit):",
      ...Array.from({ length: 5 }, (_, i) => `${22 + i}. read notes.md`),
    ].join("\n");
    const op = await askSecondOpinion({ baseUrl: base, model: model as string, digest, timeoutMs: 120_000 });
    console.log(`[ollama] ${model}: ${JSON.stringify(op)}`);
    expect(op).not.toBeNull();
    expect(typeof op?.stuck).toBe("boolean");
  });
});
