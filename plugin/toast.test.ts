import { describe, expect, it } from "vitest";
import { configSchema, policyFromConfig, SessionForest, type VerdictChange } from "../shared/index.ts";
import { toastFor } from "./toast.ts";

function changes(): VerdictChange[] {
  const forest = new SessionForest(policyFromConfig(configSchema.parse({})));
  const out: VerdictChange[] = [];
  for (let i = 0; i < 30; i++) {
    out.push(
      ...forest.observe({ kind: "turn", sessionId: "ses_w", parentId: "ses_root", agent: "build", time: i })
        .changes,
    );
    const call = {
      sessionId: "ses_w",
      parentId: "ses_root",
      agent: "build",
      tool: "read",
      callId: `c${i}`,
      fp: "fp",
      nfp: "nfp",
      target: "src/navbar.js",
      exit: null,
      failed: false,
      effect: "none" as const,
      change: null,
      write: null,
      outcome: "same",
      worktree: null,
      time: i,
    };
    out.push(...forest.observe({ kind: "tool", call }).changes.filter((c) => c.sessionId === "ses_w"));
  }
  return out;
}

describe("toastFor", () => {
  const [stalling, looping] = changes();

  it("names the session, agent, turns, $ since landed and the top target", () => {
    expect(stalling?.verdict).toBe("stalling");
    const t = toastFor(stalling as VerdictChange);
    expect(t?.variant).toBe("warning");
    expect(t?.title).toBe("stallguard: stalling");
    expect(t?.message).toMatch(
      /^session ses_w \(sub-agent of ses_root\): build stalling: \d+ turns, \$0\.00 since landed; top: read src\/navbar\.js x\d+$/,
    );
  });

  it("looping is an error toast", () => {
    expect(toastFor(looping as VerdictChange)?.variant).toBe("error");
  });

  it("no toast for a recovery", () => {
    const back = { ...(looping as VerdictChange), previous: "looping" as const, verdict: "ok" as const };
    expect(toastFor(back)).toBeNull();
  });
});
