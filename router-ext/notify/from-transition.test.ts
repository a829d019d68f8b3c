import { describe, expect, it } from "vitest";
import { configSchema, type Transition, transitionSchema } from "../../shared/index.ts";
import { initialTreeState } from "../modes/actions.ts";
import { planKnobs, planTransition } from "../modes/plan.ts";
import { alertSchema } from "./types.ts";

/** The alert the plan raises for a transition in the default (warn) mode, or null. */
function alertFromTransition(t: Transition) {
  const ctx = { tree: initialTreeState(t.root_id), pluginSeenAt: null };
  return planTransition(ctx, t, planKnobs(configSchema.parse({})), t.at).alerts[0] ?? null;
}

function transition(over: Partial<Transition>): Transition {
  return transitionSchema.parse({
    type: "transition",
    id: "p:ses_child:1000:os",
    source: "plugin",
    session_id: "ses_child",
    parent_id: "ses_root",
    root_id: "ses_root",
    agent: "build",
    verdict: "stalling",
    previous: "ok",
    reason: "repeat_target",
    signals: {
      calls: 40,
      landed: 2,
      turns: 30,
      turns_since_landed: 14,
      calls_since_landed: 20,
      usd_since_landed: 0.4242,
      usd_total: 1.5,
      dup_share: 0.5,
      ndup_share: 0.6,
      fail_streak: 3,
      context_tokens: 120000,
      max_context_tokens: 130000,
      novelty: 0.1,
      injected_since_landed: 0,
      flip_flops: 0,
      compactions: 0,
      read_only: false,
      last_landed_at: 500,
    },
    top_target: "read src/secret-plan.ts",
    top_target_count: 9,
    report: "INCIDENT REPORT\nline two",
    at: 1000,
    plugin_version: "0.1.0",
    ...over,
  });
}

describe("alertFromTransition", () => {
  it.each([
    ["ok", "stalling", "warning", "trigger"],
    ["ok", "looping", "critical", "trigger"],
    ["stalling", "looping", "critical", "escalate"],
    ["stalling", "ok", "warning", "resolve"],
    ["looping", "ok", "critical", "resolve"],
  ] as const)("%s -> %s is a %s %s", (previous, verdict, severity, state) => {
    const a = alertFromTransition(transition({ previous, verdict }));
    expect(a).toMatchObject({ severity, state, dedup_key: "ses_root", source: "no-progress", at: 1000 });
    expect(alertSchema.safeParse(a).success).toBe(true);
  });

  it.each([
    ["ok", "ok"],
    ["stalling", "stalling"],
    ["looping", "looping"],
    ["looping", "stalling"],
  ] as const)("%s -> %s sends nothing", (previous, verdict) => {
    expect(alertFromTransition(transition({ previous, verdict }))).toBeNull();
  });

  it("builds the title and summary from ids, agent and counts, never the target", () => {
    const a = alertFromTransition(transition({ previous: "stalling", verdict: "looping" }));
    expect(a?.title).toBe("stallguard: build is looping");
    expect(a?.summary).toBe(
      "build session ses_child (tree ses_root) looping: repeat_target; 14 turns and $0.42 since a change landed, top call repeated 9x, 3 failures in a row",
    );
    expect(`${a?.title} ${a?.summary}`).not.toContain("secret-plan");
    expect(a?.details).toBe("INCIDENT REPORT\nline two");
  });

  it("names a root session once and tags watchdog reports", () => {
    const a = alertFromTransition(
      transition({
        session_id: "ses_root",
        parent_id: null,
        source: "watchdog",
        previous: "looping",
        verdict: "ok",
      }),
    );
    expect(a).toMatchObject({ source: "watchdog", title: "stallguard: build recovered" });
    expect(a?.summary).toBe("build session ses_root is ok again (was looping) (watchdog)");
  });

  it("keeps the summary on one line within the schema bound", () => {
    const long = "x".repeat(200);
    const a = alertFromTransition(transition({ session_id: long, root_id: `r${long.slice(1)}` }));
    expect(a?.summary.length).toBeLessThanOrEqual(500);
    expect(alertSchema.safeParse(a).success).toBe(true);
  });
});
