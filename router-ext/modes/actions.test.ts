import { describe, expect, it } from "vitest";
import { decideOnVerdictChange, initialTreeState, type ModeKnobs, recoveryCompleted } from "./actions.ts";

const knobs = (mode: ModeKnobs["mode"]): ModeKnobs => ({
  mode,
  recoverWindowMs: 60 * 60_000,
  maxRecoveries: 2,
  contextCap: 200_000,
});
const det = (sessionId: string, verdict: "ok" | "stalling" | "looping" = "looping", pluginLive = true) => ({
  sessionId,
  rootId: "root",
  verdict,
  pluginLive,
  report: "[stallguard] report",
});
const types = (a: { type: string }[]) => a.map((x) => x.type);

describe("mode actions", () => {
  it("warn mode only warns", () => {
    const d = decideOnVerdictChange(initialTreeState("root"), det("w"), knobs("warn"), 0);
    expect(types(d.actions)).toEqual(["alert"]);
    expect(d.state.stage).toBe(0);
  });

  it("stalling only warns in every mode", () => {
    for (const m of ["auto_compact", "auto_limit_context", "auto_recover"] as const) {
      const d = decideOnVerdictChange(initialTreeState("root"), det("w", "stalling"), knobs(m), 0);
      expect(d.actions).toEqual([{ type: "alert", severity: "warning" }]);
    }
  });

  it("auto_compact asks the plugin to compact the stuck session, without refusal", () => {
    const d = decideOnVerdictChange(initialTreeState("root"), det("w"), knobs("auto_compact"), 0);
    expect(types(d.actions)).toEqual(["alert", "directive"]);
    expect(d.actions[1]).toMatchObject({ directive: "compact", sessionId: "w" });
  });

  it("auto_limit_context caps the tree's context", () => {
    const d = decideOnVerdictChange(initialTreeState("root"), det("w"), knobs("auto_limit_context"), 0);
    expect(d.actions).toContainEqual({ type: "cap_context", rootId: "root", cap: 200_000 });
    expect(d.state.capContext).toBe(true);
  });

  it("auto_recover goes stage 1, stage 2, then the hard stop after max_recoveries", () => {
    const k = knobs("auto_recover");
    const s1 = decideOnVerdictChange(initialTreeState("root"), det("w1"), k, 0);
    expect(s1.state.stage).toBe(1);
    expect(types(s1.actions)).toEqual(["alert", "refuse_session", "directive"]);
    const lifted = recoveryCompleted(s1.state);
    expect(lifted.refusedSessions).toEqual([]);
    const s2 = decideOnVerdictChange(lifted, det("w2"), k, 10 * 60_000);
    expect(s2.state.stage).toBe(2);
    expect(types(s2.actions)).toEqual(["alert", "refuse_session", "cap_context", "directive"]);
    const s3 = decideOnVerdictChange(recoveryCompleted(s2.state), det("w3"), k, 20 * 60_000);
    expect(s3.state.stage).toBe(3);
    expect(s3.state.hardStop).toBe(true);
    expect(types(s3.actions)).toEqual(["refuse_tree", "alert", "toast"]);
    expect(s3.actions.some((a) => a.type === "directive")).toBe(false);
    // Nothing restarts a hard-stopped tree: further looping verdicts only warn.
    const s4 = decideOnVerdictChange(s3.state, det("w4"), k, 21 * 60_000);
    expect(types(s4.actions)).toEqual(["alert"]);
    expect(s4.state.hardStop).toBe(true);
    // Admin Resume drops the tree's stored state (modes/store.ts), so the next looping verdict starts at stage 1.
    const again = decideOnVerdictChange(initialTreeState(s4.state.rootId), det("w5"), k, 22 * 60_000);
    expect(again.state.stage).toBe(1);
  });

  it("recoveries outside recover_window do not count", () => {
    const k = knobs("auto_recover");
    const s1 = decideOnVerdictChange(initialTreeState("root"), det("w1"), k, 0);
    const s2 = decideOnVerdictChange(recoveryCompleted(s1.state), det("w2"), k, 61 * 60_000);
    expect(s2.state.stage).toBe(1);
  });

  it("without a live plugin only the router half runs and the decision says so", () => {
    const d = decideOnVerdictChange(
      initialTreeState("root"),
      det("w", "looping", false),
      knobs("auto_recover"),
      0,
    );
    expect(types(d.actions)).toEqual(["alert", "refuse_session"]);
    expect(d.cannotAct).toMatch(/live plugin/);
    expect(d.state.recoveries).toEqual([]);
  });

  it("max_recoveries 0 means the first looping verdict is the hard stop", () => {
    const d = decideOnVerdictChange(
      initialTreeState("root"),
      det("w"),
      { ...knobs("auto_recover"), maxRecoveries: 0 },
      0,
    );
    expect(d.state.stage).toBe(3);
  });
});
