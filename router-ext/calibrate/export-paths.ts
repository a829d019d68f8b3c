// Which files `--export` reads: the files named, every *.json in a directory
// named (not its sub-directories), and a quoted glob's matches (* and ? in
// the last path segment, expanded here because a quoted glob reaches us as
// text). labels.json files are labels, not exports. Whatever is skipped is
// listed with the reason, so nothing is dropped silently.
import { existsSync, readdirSync, statSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { UsageError } from "./args.ts";

export interface LabelFile {
  path: string;
  /** directory: in a directory given; beside: next to export files given; named: given itself. */
  how: "directory" | "beside" | "named";
}

export interface ExportFiles {
  /** Export files in the order given (a directory's entries sorted by name). */
  files: string[];
  labelFiles: LabelFile[];
  /** What was skipped on purpose, each with its reason. */
  ignored: string[];
}

const LABELS = "labels.json";
const isGlob = (s: string) => /[*?]/.test(s);

/** A glob segment as a regex: * is any run of characters, ? one character, nothing else is special. */
export function globRegex(segment: string): RegExp {
  const body = segment
    .replace(/[.+^${}()|[\]\\]/g, "\\$&")
    .replace(/\*/g, ".*")
    .replace(/\?/g, ".");
  return new RegExp(`^${body}$`);
}

/** The entries of `pattern`'s directory that match its last segment, sorted; hidden ones only when asked for. */
export function expandGlob(pattern: string): string[] {
  const dir = dirname(pattern);
  const seg = basename(pattern);
  if (isGlob(dir)) throw new UsageError(`--export: only the last path segment may hold * or ?: ${pattern}`);
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    throw new UsageError(`--export: no such directory for ${pattern}: ${dir}`);
  }
  const re = globRegex(seg);
  const matches = names
    .filter((n) => re.test(n) && (seg.startsWith(".") || !n.startsWith(".")))
    .sort()
    .map((n) => join(dir, n));
  if (!matches.length) throw new UsageError(`--export: nothing matches ${pattern}`);
  return matches;
}

function list(names: readonly string[], max = 5): string {
  return names.length > max
    ? `${names.slice(0, max).join(", ")} and ${names.length - max} more`
    : names.join(", ");
}

/** Resolves the --export paths; a path that does not exist (or a glob matching nothing) is a UsageError. */
export function exportFiles(paths: readonly string[]): ExportFiles {
  const out: ExportFiles = { files: [], labelFiles: [], ignored: [] };
  const seen = new Set<string>();
  const twice: string[] = [];
  const addFile = (path: string) => {
    const key = resolve(path);
    if (seen.has(key)) {
      twice.push(path);
      return false;
    }
    seen.add(key);
    return true;
  };
  const given: string[] = [];
  for (const p of paths) given.push(...(isGlob(p) ? expandGlob(p) : [p]));
  const besideDirs: string[] = [];
  for (const p of given) {
    let isDir: boolean;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      throw new UsageError(`--export: no such file or directory: ${p}`);
    }
    if (!isDir) {
      if (!addFile(p)) continue;
      if (basename(p) === LABELS) out.labelFiles.push({ path: p, how: "named" });
      else {
        out.files.push(p);
        besideDirs.push(dirname(p));
      }
      continue;
    }
    const skipped: string[] = [];
    for (const name of readdirSync(p).sort()) {
      const full = join(p, name);
      let sub = false;
      try {
        sub = statSync(full).isDirectory();
      } catch {
        skipped.push(`${name} (unreadable)`);
        continue;
      }
      if (sub) skipped.push(`${name}/ (a sub-directory: give it as its own path)`);
      else if (!name.endsWith(".json")) skipped.push(`${name} (not .json)`);
      else if (!addFile(full)) continue;
      else if (name === LABELS) out.labelFiles.push({ path: full, how: "directory" });
      else out.files.push(full);
    }
    if (skipped.length) out.ignored.push(`${p}: ignored ${list(skipped)}`);
  }
  // Labels next to export files named one by one (or through a glob) count as if the directory was given.
  for (const dir of [...new Set(besideDirs)]) {
    const path = join(dir, LABELS);
    if (!seen.has(resolve(path)) && existsSync(path)) {
      seen.add(resolve(path));
      out.labelFiles.push({ path, how: "beside" });
    }
  }
  if (twice.length) out.ignored.push(`given more than once, read once: ${list(twice)}`);
  return out;
}
