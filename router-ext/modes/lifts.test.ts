import { describe, expect, it } from "vitest";
import { byMode, directiveResultLifts, markLifts, okLifts } from "./lifts.ts";
import { MODES_ACTOR } from "./plan.ts";

const mode = { state: "stopped" as const, changed_by: MODES_ACTOR };
const admin = { state: "stopped" as const, changed_by: "alice" };
const lifted = { state: "running" as const, changed_by: MODES_ACTOR };

describe("lifts", () => {
  it("only a mode's standing refusal is the mode's to lift", () => {
    expect(byMode(mode)).toBe(true);
    expect(byMode(admin)).toBe(false);
    expect(byMode(lifted)).toBe(false);
    expect(byMode(undefined)).toBe(false);
  });

  it("a session reported ok lifts the mode's refusal, never an admin's", () => {
    expect(okLifts("ok", mode)).toBe(true);
    expect(okLifts("ok", admin)).toBe(false);
    expect(okLifts("looping", mode)).toBe(false);
    expect(okLifts("stalling", mode)).toBe(false);
  });

  it("a successful directive lifts the mode's refusals among its candidates, each once; a failed one nothing", () => {
    const candidates = [
      { key: "w", refusal: mode },
      { key: "w2", refusal: mode },
      { key: "other", refusal: admin },
      { key: "w", refusal: mode },
      { key: "gone", refusal: undefined },
    ];
    expect(directiveResultLifts(true, candidates)).toEqual(["w", "w2"]);
    expect(directiveResultLifts(false, candidates)).toEqual([]);
  });

  it("a false alarm on a flagged session lifts the whole tree, whoever refused it", () => {
    const s = { worst: "looping" as const, flags: 1, root_id: "root" };
    expect(markLifts("false_alarm", s, admin, ["w", "sib"])).toEqual({
      flagged: true,
      tree: true,
      sessions: ["w", "sib"],
      resumeTree: true,
      lifted: ["tree root", "session w", "session sib"],
    });
    // Nothing refused in the tree: the mode state still starts over, nothing is named.
    expect(markLifts("false_alarm", s, undefined, [])).toMatchObject({
      tree: false,
      resumeTree: true,
      lifted: [],
    });
  });

  it("a confirmed loop, or a mark on a session never flagged, lifts nothing", () => {
    const flagged = { worst: "stalling" as const, flags: 0, root_id: "root" };
    const quiet = { worst: "ok" as const, flags: 0, root_id: "root" };
    expect(markLifts("confirmed_loop", flagged, admin, ["w"])).toMatchObject({
      flagged: true,
      tree: false,
      sessions: [],
      resumeTree: false,
    });
    expect(markLifts("false_alarm", quiet, admin, ["w"])).toMatchObject({
      flagged: false,
      tree: false,
      resumeTree: false,
      lifted: [],
    });
  });
});
