import { describe, expect, it } from "vitest";
import { changesFiles, toolKind } from "./tool-kinds.ts";

describe("the one tool table", () => {
  it("names each tool's kind in any case, and nothing for tools it does not know", () => {
    expect(toolKind("Read")).toBe("read");
    expect(toolKind("replace")).toBe("edit");
    expect(toolKind("apply_patch")).toBe("patch");
    expect(toolKind("SHELL")).toBe("bash");
    expect(toolKind("todowrite")).toBeUndefined();
    // Object's own keys are not tools.
    expect(toolKind("constructor")).toBeUndefined();
  });

  it("the tools that change files are exactly the edits, writes and patches (replace included)", () => {
    const changing = [
      "edit",
      "multiedit",
      "str_replace",
      "replace",
      "write",
      "create",
      "apply_patch",
      "patch",
    ];
    for (const t of changing) expect(changesFiles(t), t).toBe(true);
    for (const t of ["read", "grep", "bash", "task", "webfetch"]) expect(changesFiles(t), t).toBe(false);
  });
});
