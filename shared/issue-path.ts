/** A validation issue's path as `a.b[2].c`; "(root)" when empty. */
export function issuePath(path: readonly PropertyKey[]): string {
  return (
    path
      .map((p) => (typeof p === "number" ? `[${p}]` : String(p)))
      .join(".")
      .replace(/\.\[/g, "[") || "(root)"
  );
}
