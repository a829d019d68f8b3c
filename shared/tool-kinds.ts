// The one table of tool names: what kind of call each tool makes. The core's
// call shapes (tool-call.ts), the plugin's work-tree probe (which tools change
// files themselves) and its write probe all read it, so they cannot disagree.

/** What a tool call does, as far as the detector cares. */
export type ToolKind = "read" | "edit" | "write" | "patch" | "search" | "bash";

const KINDS: Readonly<Record<string, ToolKind>> = {
  read: "read",
  view: "read",
  cat: "read",
  edit: "edit",
  multiedit: "edit",
  str_replace: "edit",
  replace: "edit",
  write: "write",
  create: "write",
  apply_patch: "patch",
  patch: "patch",
  grep: "search",
  glob: "search",
  find: "search",
  search: "search",
  codesearch: "search",
  list: "search",
  ls: "search",
  bash: "bash",
  shell: "bash",
};

/** The kind of a tool by name (any case); undefined for a tool the table does not know. */
export function toolKind(tool: string): ToolKind | undefined {
  const t = tool.toLowerCase();
  return Object.hasOwn(KINDS, t) ? KINDS[t] : undefined;
}

/** Tools that change files themselves (an edit, a write, a patch). */
export function changesFiles(tool: string): boolean {
  const k = toolKind(tool);
  return k === "edit" || k === "write" || k === "patch";
}
