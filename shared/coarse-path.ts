/**
 * A path as a coarse target: relative to the session's directory when inside
 * it, the user's home shown as ~, so no account name leaves the machine.
 */
export function coarsePath(path: string, directory?: string | null): string {
  let p = String(path).trim().replace(/\\/g, "/");
  // a malformed session record may carry a non-string directory: ignore it
  if (typeof directory === "string" && directory) {
    const dir = normalDirectory(directory);
    if (p === dir) return ".";
    if (dir && p.startsWith(`${dir}/`)) p = p.slice(dir.length + 1);
  }
  p = p
    .replace(/^\/home\/[^/]+(?=\/|$)/, "~")
    .replace(/^\/Users\/[^/]+(?=\/|$)/, "~")
    .replace(/^\/root(?=\/|$)/, "~")
    .replace(/^\.\//, "");
  return p.length > 200 ? `...${p.slice(-197)}` : p || ".";
}

/** The last directory normalized: a session's calls all name one (a pure cache, one entry). */
let lastDirectory = "";
let lastNormal = "";

/** The directory with forward slashes and no trailing one. */
function normalDirectory(directory: string): string {
  if (directory !== lastDirectory) {
    lastNormal = directory.replace(/\\/g, "/").replace(/\/+$/, "");
    lastDirectory = directory;
  }
  return lastNormal;
}
