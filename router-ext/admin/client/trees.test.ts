import { describe, expect, it } from "vitest";
import { groupTrees, verdictRank } from "./trees.ts";

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
