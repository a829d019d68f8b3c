import { describe, expect, it } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { initialTreeState, parseTreeState } from "../modes/policy.ts";
import { modeKnobs, stageOf } from "./stage.ts";

const t = (verdict: "ok" | "stalling" | "looping", session = "w") => ({
  session_id: session,
  root_id: "root",
  verdict,
  report: "r",
});

describe("stageOf", () => {
  it("warn mode: flagged sessions are warned, ok ones none", () => {
    const knobs = modeKnobs(configSchema.parse({}));
    const ctx = { treeState: initialTreeState("root"), knobs, pluginLive: true, now: 0 };
    expect(stageOf(t("looping"), ctx)).toMatchObject({ stage: "warned" });
    expect(stageOf(t("stalling"), ctx)).toMatchObject({ stage: "warned" });
    expect(stageOf(t("ok"), ctx)).toMatchObject({ stage: "none", actions: [] });
  });

  it("auto_recover: recover, then limit, then a hard stop that survives a serialize round trip", () => {
    const knobs = modeKnobs(configSchema.parse({ progress: { mode: "auto_recover", max_recoveries: 2 } }));
    let tree = initialTreeState("root");
    const stages: string[] = [];
    for (let i = 0; i < 3; i++) {
      const out = stageOf(t("looping"), { treeState: tree, knobs, pluginLive: true, now: i * 1000 });
      stages.push(out.stage);
      tree = parseTreeState("root", JSON.stringify(out.treeState));
    }
    expect(stages).toEqual(["recovering", "limited", "stopped"]);
    const last = stageOf(t("ok"), { treeState: tree, knobs, pluginLive: true, now: 5000 });
    expect(last.stage).toBe("stopped");
    expect(parseTreeState("root", "not json")).toEqual(initialTreeState("root"));
  });
});
