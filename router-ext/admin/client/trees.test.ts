import { describe, expect, it } from "vitest";
import { attentionRank, groupTrees, treeOrder, verdictRank } from "./trees.ts";

const row = (session_id: string, parent_id: string | null, root_id: string) => ({
  session_id,
  parent_id,
  root_id,
});

const shape = (rows: ReturnType<typeof row>[]) =>
  groupTrees(rows).map((t) => ({
    root: t.rootId,
    present: t.rootPresent,
    rows: t.rows.map((r) => `${"  ".repeat(r.depth)}${r.row.session_id}`),
  }));

describe("groupTrees", () => {
  it("puts the root first and children under their parents, depth-first", () => {
    expect(
      shape([row("c2", "r", "r"), row("g1", "c1", "r"), row("r", null, "r"), row("c1", "r", "r")]),
    ).toEqual([{ root: "r", present: true, rows: ["r", "  c2", "  c1", "    g1"] }]);
  });

  it("keeps separate trees apart in first-seen order", () => {
    expect(shape([row("b", null, "b"), row("a1", "a", "a"), row("a", null, "a")]).map((t) => t.root)).toEqual(
      ["b", "a"],
    );
  });

  it("shows children whose root or parent is missing at the top of their tree", () => {
    expect(shape([row("x", "gone", "r"), row("y", "x", "r")])).toEqual([
      { root: "r", present: false, rows: ["x", "  y"] },
    ]);
  });

  it("cuts parent cycles without dropping rows", () => {
    const t = shape([row("r", null, "r"), row("a", "b", "r"), row("b", "a", "r")]);
    expect(t[0]?.rows.map((s) => s.trim()).sort()).toEqual(["a", "b", "r"]);
  });
});

describe("verdictRank", () => {
  it.each([
    ["looping", 2],
    ["stalling", 1],
    ["ok", 0],
    [null, 0],
  ] as const)("%s -> %i", (v, n) => expect(verdictRank(v)).toBe(n));
});

describe("treeOrder", () => {
  const session = (id: string, over: Partial<Parameters<typeof attentionRank>[0]> = {}) => ({
    session_id: id,
    parent_id: null,
    root_id: id,
    verdict: "ok",
    worst: "ok",
    flags: 0,
    refused: false,
    mark: null,
    last_seen_at: 1000,
    ...over,
  });

  it("refused, looping, stalling, then flagged before or marked trees come before quiet ones, however recent", () => {
    const rows = [
      session("quiet_new", { last_seen_at: 9000 }),
      session("marked", { mark: { kind: "false_alarm" }, last_seen_at: 10 }),
      session("stalling", { verdict: "stalling", worst: "stalling", flags: 1 }),
      session("was_flagged", { worst: "looping", flags: 1, last_seen_at: 20 }),
      session("quiet_old", { last_seen_at: 5 }),
      session("refused", { refused: true, last_seen_at: 1 }),
      session("looping", { verdict: "looping", worst: "looping", flags: 1 }),
    ];
    expect(
      groupTrees(rows)
        .sort(treeOrder)
        .map((t) => t.rootId),
    ).toEqual(["refused", "looping", "stalling", "was_flagged", "marked", "quiet_new", "quiet_old"]);
  });

  it("a tree weighs as its most urgent session", () => {
    const rows = [
      session("a", { last_seen_at: 9000 }),
      session("b", { last_seen_at: 1 }),
      { ...session("b_child", { verdict: "looping", last_seen_at: 1 }), parent_id: "b", root_id: "b" },
    ];
    expect(
      groupTrees(rows)
        .sort(treeOrder)
        .map((t) => t.rootId),
    ).toEqual(["b", "a"]);
    expect(attentionRank(rows[2] as ReturnType<typeof session>)).toBe(3);
  });
});
