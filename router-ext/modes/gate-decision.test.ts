// The gate's one decision over the facts in memory: refusals by session and
// tree, the tree learnt from parent links (bottom-up included), the cap
// against the last measured context, and the exemptions.
import { describe, expect, it } from "vitest";
import { GateFacts } from "../gate/facts.ts";
import type { GateIdentity } from "../gate/types.ts";
import { decideGate, refusalReason } from "./gate-decision.ts";
import { MODES_ACTOR } from "./plan.ts";

const who = (sessionId: string | null, over: Partial<GateIdentity> = {}): GateIdentity => ({
  sessionId,
  agent: "build",
  parent: null,
  pluginVersion: null,
  ...over,
});

function stop(f: GateFacts, scope: "session" | "tree", key: string, by = "alice", at = 1000): void {
  f.apply({ kind: "refusal", scope, key, state: "stopped", by, at, reason: "admin Stop" });
}

const measured = (
  sessionId: string,
  agent: string,
  startedAt: number,
  tokens: number | null,
  refused = false,
) => ({ kind: "request", sessionId, agent, startedAt, contextTokens: tokens, refused }) as const;

describe("decideGate", () => {
  it("passes a request without a usable session id, and an unknown session", () => {
    const f = new GateFacts();
    expect(decideGate(f, who(null))).toEqual({ refused: false, scope: null, reason: null, rootId: null });
    expect(decideGate(f, who("x".repeat(201))).rootId).toBeNull();
    expect(decideGate(f, who("ses_new"))).toEqual({
      refused: false,
      scope: null,
      reason: null,
      rootId: "ses_new",
    });
  });

  it("refuses a stopped session on its own and a stopped tree for every session filed under it", () => {
    const f = new GateFacts();
    f.learn(who("child", { parent: "mid" }));
    f.learn(who("mid", { parent: "top" })); // bottom-up: child moves under top
    expect(f.rootOf("child")).toBe("top");
    stop(f, "tree", "top");
    const d = decideGate(f, who("child"));
    expect(d).toMatchObject({ refused: true, scope: "tree", rootId: "top", refusedAt: 1000 });
    expect(d.reason).toBe(refusalReason("tree", { by: "alice", at: 1000, reason: "admin Stop" }));
    expect(d.reason).toBe("its session tree was stopped by alice at 1970-01-01T00:00:01.000Z (admin Stop)");
    stop(f, "session", "other", "bob", 2000);
    expect(decideGate(f, who("other"))).toMatchObject({ refused: true, scope: "session", rootId: "other" });
    f.apply({
      kind: "refusal",
      scope: "tree",
      key: "top",
      state: "running",
      by: "bob",
      at: 3000,
      reason: null,
    });
    expect(decideGate(f, who("child")).refused).toBe(false);
  });

  it("an unknown session with a parent header belongs to the parent's tree before anything is learnt", () => {
    const f = new GateFacts();
    f.learn(who("mid", { parent: "top" }));
    stop(f, "tree", "top");
    expect(decideGate(f, who("fresh", { parent: "mid" }))).toMatchObject({ refused: true, rootId: "top" });
    expect(decideGate(f, who("fresh2", { parent: "nobody" }))).toMatchObject({
      refused: false,
      rootId: "nobody",
    });
    expect(f.rootOf("fresh")).toBeUndefined(); // deciding learnt nothing
  });

  it("a recovery's compaction passes its mode's refusal, never an admin's, never a tree's", () => {
    const f = new GateFacts();
    stop(f, "session", "w", MODES_ACTOR);
    expect(decideGate(f, who("w", { agent: "compaction" })).refused).toBe(false);
    expect(decideGate(f, who("w")).refused).toBe(true);
    stop(f, "session", "v", "alice");
    expect(decideGate(f, who("v", { agent: "compaction" })).refused).toBe(true);
    stop(f, "tree", "t");
    expect(decideGate(f, who("t", { agent: "compaction" })).refused).toBe(true);
  });

  it("the cap: over it once measured at or above, never for the compaction or a title, reset by a compaction", () => {
    const f = new GateFacts();
    f.apply({ kind: "cap", rootId: "r", cap: 4000 });
    expect(decideGate(f, who("r")).overCap).toBeUndefined(); // nothing measured yet
    f.apply(measured("r", "build", 10, 3999));
    expect(decideGate(f, who("r")).overCap).toBeUndefined();
    f.apply(measured("r", "build", 20, 4000));
    expect(decideGate(f, who("r")).overCap).toEqual({ cap: 4000, tokens: 4000 });
    expect(decideGate(f, who("r", { agent: "compaction" })).overCap).toBeUndefined();
    expect(decideGate(f, who("r", { agent: "title" })).overCap).toBeUndefined();
    // A refused request and one without usage measure nothing; an older answer arriving late does not win.
    f.apply(measured("r", "build", 30, 100, true));
    f.apply(measured("r", "build", 31, null));
    f.apply(measured("r", "build", 15, 50));
    expect(decideGate(f, who("r")).overCap?.tokens).toBe(4000);
    f.apply(measured("r", "compaction", 40, 9000));
    expect(decideGate(f, who("r")).overCap).toBeUndefined();
    f.apply(measured("r", "build", 35, 8000)); // started before the compaction: not counted
    expect(decideGate(f, who("r")).overCap).toBeUndefined();
    f.apply(measured("r", "build", 50, 5000));
    expect(decideGate(f, who("r")).overCap).toEqual({ cap: 4000, tokens: 5000 });
    f.apply({ kind: "cap", rootId: "r", cap: null });
    expect(decideGate(f, who("r")).overCap).toBeUndefined();
  });

  it("a reload replaces everything", () => {
    const f = new GateFacts();
    stop(f, "tree", "a");
    f.learn(who("b", { parent: "a" }));
    f.reload({
      refusals: [{ scope: "session", key: "c", by: "x", at: 5, reason: null }],
      roots: [{ sessionId: "d", rootId: "e" }],
      caps: [{ rootId: "e", cap: 10 }],
      contexts: [{ sessionId: "d", tokens: 12, at: 3, compactedAt: -1 }],
    });
    expect(decideGate(f, who("b")).refused).toBe(false);
    expect(f.rootOf("b")).toBeUndefined();
    expect(decideGate(f, who("c")).refused).toBe(true);
    expect(decideGate(f, who("d")).overCap).toEqual({ cap: 10, tokens: 12 });
  });
});
