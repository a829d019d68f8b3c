// planTransition: everything one transition causes, decided once. Stages per
// mode, the hard stop's tree refusal and toast, directives, lifts and the
// alert lifecycle (trigger, escalate, resolve; a step down keeps the incident
// open), all as values.
import { describe, expect, it } from "vitest";
import { configSchema, type Transition } from "../../shared/index.ts";
import { transition as wire } from "../../test/helpers/wire-fixtures.ts";
import { initialTreeState, parseTreeState } from "./actions.ts";
import { alertLevel, directiveId, planKnobs, planTransition, type TransitionContext } from "./plan.ts";

const knobsFor = (progress: Record<string, unknown> = {}) => planKnobs(configSchema.parse({ progress }));
const t = (verdict: Transition["verdict"], session = "w", over: Partial<Transition> = {}): Transition =>
  wire(session, "root", "build", verdict === "ok" ? "looping" : "ok", verdict, 1000, {
    report: "r",
    ...over,
  });
const live = (tree = initialTreeState("root"), now = 0): TransitionContext => ({ tree, pluginSeenAt: now });

describe("planTransition", () => {
  it("warn mode: flagged sessions are warned, ok ones none", () => {
    const knobs = knobsFor();
    expect(planTransition(live(), t("looping"), knobs, 0)).toMatchObject({ stage: "warned" });
    expect(planTransition(live(), t("stalling"), knobs, 0)).toMatchObject({ stage: "warned" });
    const ok = planTransition(live(), t("ok"), knobs, 0);
    expect(ok).toMatchObject({ stage: "none", directives: [], toasts: [] });
    expect(ok.effects.liftSessions).toEqual([{ sessionId: "w", reason: "session ok" }]);
  });

  it("auto_recover: recover, then limit, then a hard stop that survives a serialize round trip", () => {
    const knobs = knobsFor({ mode: "auto_recover", max_recoveries: 2 });
    let tree = initialTreeState("root");
    const stages: string[] = [];
    for (let i = 0; i < 3; i++) {
      const plan = planTransition(live(tree, i * 1000), t("looping"), knobs, i * 1000);
      stages.push(plan.stage);
      tree = parseTreeState("root", JSON.stringify(plan.state));
    }
    expect(stages).toEqual(["recovering", "limited", "stopped"]);
    const last = planTransition(live(tree, 5000), t("ok"), knobs, 5000);
    expect(last.stage).toBe("stopped");
    expect(parseTreeState("root", "not json")).toEqual(initialTreeState("root"));
  });

  it("stage 1 refuses the session and hands out one recover directive with a stable id", () => {
    const plan = planTransition(live(), t("looping"), knobsFor({ mode: "auto_recover" }), 0);
    expect(plan.effects.refuseSessions).toEqual([
      { sessionId: "w", reason: "auto_recover stage 1: recovering" },
    ]);
    expect(plan.directives).toEqual([
      { id: directiveId(t("looping").id), action: "recover", session_id: "w", root_id: "root", report: "r" },
    ]);
    // Stable: the same transition planned again (a retried /progress post, a
    // restarted server) hands out the same id, so the plugin runs it once.
    const again = planTransition(live(), t("looping"), knobsFor({ mode: "auto_recover" }), 5000);
    expect(again.directives.map((d) => d.id)).toEqual(plan.directives.map((d) => d.id));
    expect(plan.directives[0]?.id).toMatch(/^d:[A-Za-z0-9_-]{32}$/);
    expect(plan.directives[0]?.id).not.toContain(t("looping").id);
    expect(directiveId("p:w:1:ol")).not.toBe(directiveId("p:w:2:ol"));
  });

  it("the hard stop refuses the tree in the same plan, with a toast for the plugin that reported it", () => {
    const knobs = knobsFor({ mode: "auto_recover", max_recoveries: 0 });
    const plan = planTransition(live(), t("looping"), knobs, 0);
    expect(plan.effects.hardStop).toEqual({
      rootId: "root",
      reason: "max_recoveries (0) reached within recover_window",
    });
    expect(plan.directives).toEqual([]);
    expect(plan.toasts).toEqual([
      expect.objectContaining({
        session_id: "w",
        variant: "error",
        message: expect.stringContaining("admin Resume"),
      }),
    ]);
    expect(plan.alerts.map((a) => [a.severity, a.state])).toEqual([["critical", "trigger"]]);
    // Reported by the watchdog: nobody to show a toast to, so the log says so.
    const byWatchdog = planTransition(live(), t("looping", "w", { source: "watchdog" }), knobs, 0);
    expect(byWatchdog.toasts).toEqual([]);
    expect(byWatchdog.logs.join("\n")).toContain("no plugin to show it");
  });

  it("without a live plugin only the router's half runs, and the plan says why", () => {
    const knobs = knobsFor({ mode: "auto_recover" });
    const plan = planTransition(
      { tree: initialTreeState("root"), pluginSeenAt: null },
      t("looping"),
      knobs,
      0,
    );
    expect(plan.directives).toEqual([]);
    expect(plan.effects.refuseSessions).toHaveLength(1);
    expect(plan.cannotAct).toMatch(/live plugin/);
    const stale = { tree: initialTreeState("root"), pluginSeenAt: 0 };
    expect(planTransition(stale, t("looping"), knobs, knobs.liveWindowMs + 1).cannotAct).toMatch(
      /live plugin/,
    );
  });
});

describe("alert lifecycle", () => {
  it.each([
    ["ok", "stalling", "warning", "warning", "trigger"],
    ["ok", "looping", "critical", "critical", "trigger"],
    ["stalling", "looping", "critical", "critical", "escalate"],
    ["stalling", "ok", null, "warning", "resolve"],
    ["looping", "ok", null, "critical", "resolve"],
  ] as const)("%s -> %s is a %s %s", (previous, verdict, flagged, severity, state) => {
    expect(alertLevel({ previous, verdict }, flagged)).toEqual({ severity, state });
  });

  it.each([
    ["ok", "ok"],
    ["stalling", "stalling"],
    ["looping", "looping"],
    ["looping", "stalling"],
  ] as const)("%s -> %s raises nothing", (previous, verdict) => {
    expect(alertLevel({ previous, verdict }, "warning")).toBeNull();
  });
});
