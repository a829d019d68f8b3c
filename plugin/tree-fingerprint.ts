// Fingerprints of a work tree, for the probe (worktree-probe.ts). In a git work
// tree: sha256 over `git status --porcelain=v2` (with the branch head, so a
// commit is a new state, and the HEAD and index blob ids of every changed
// file) and the contents of the files it lists (changed and untracked), which
// pins the tracked diff. Outside git: the state (content hash, or size and
// mtime for big files) of the files a command names. Nothing read here is
// kept but hashes; file contents go straight into the hash.
import { spawn } from "node:child_process";
import { createHash, type Hash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { referencedFiles, segments } from "../shared/bash-command.ts";
import { bashWrites } from "../shared/bash-writes.ts";

/** Runs git with args in cwd, streaming stdout to onData; code null when killed or not started. */
export type GitRunner = (
  args: readonly string[],
  cwd: string,
  onData: (chunk: Buffer) => void,
  signal: AbortSignal,
) => Promise<{ code: number | null; stderr: string }>;

export interface TreeAnswer {
  before: string;
  after: string;
}

/** git without optional locks (never holds index.lock against the agent's own git), no pager, no prompts. */
export const spawnGit: GitRunner = (args, cwd, onData, signal) =>
  new Promise((done) => {
    if (signal.aborted) {
      done({ code: null, stderr: "" });
      return;
    }
    let stderr = "";
    const child = spawn("git", args as string[], {
      cwd,
      env: { ...process.env, GIT_OPTIONAL_LOCKS: "0", GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const kill = () => child.kill("SIGKILL");
    signal.addEventListener("abort", kill, { once: true });
    child.stdout?.on("data", (b: Buffer) => onData(b));
    child.stderr?.on("data", (b: Buffer) => {
      if (stderr.length < 1000) stderr += b.toString("utf8");
    });
    child.once("error", () => {
      signal.removeEventListener("abort", kill);
      done({ code: null, stderr });
    });
    child.once("close", (code) => {
      signal.removeEventListener("abort", kill);
      done({ code: signal.aborted ? null : code, stderr });
    });
  });

/** Changed and untracked files whose content goes into the fingerprint; the rest count by their status line. */
const MAX_CHANGED = 1000;
/** Bigger files count by size and mtime, not content. */
const MAX_CONTENT_BYTES = 1024 * 1024;
/** Outside git: at most this many named files. */
const MAX_NAMED = 32;

/** One file's state for a fingerprint: absent, its content hash, or (big or special) size and mtime. */
async function fileState(path: string, signal: AbortSignal): Promise<string> {
  try {
    const st = await lstat(path);
    if (!st.isFile() || st.size > MAX_CONTENT_BYTES) return `s:${st.size}:${st.mtimeMs}:${st.mode}`;
    if (signal.aborted) return "";
    return `c:${createHash("sha256")
      .update(await readFile(path))
      .digest("hex")}`;
  } catch {
    return "absent";
  }
}

/** The work tree's root, "not-git" when dir is not inside a work tree, null on any other error. */
export async function gitRoot(dir: string, run: GitRunner, signal: AbortSignal): Promise<string | null> {
  let out = "";
  const res = await run(["rev-parse", "--show-toplevel"], dir, (b) => (out += b.toString("utf8")), signal);
  if (res.code === 0 && out.trim() !== "") return out.trim();
  return res.code === 128 && /not a git repository/i.test(res.stderr) ? "not-git" : null;
}

/** Field count before the path in a porcelain v2 record: ordinary (1) and unmerged (u) entries. */
const PATH_AFTER: Record<string, number> = { "1": 8, u: 10, "?": 1 };

function pathOf(record: string): string | null {
  const fields = PATH_AFTER[record[0] as string];
  if (fields === undefined) return null;
  let at = 0;
  for (let n = 0; n < fields; n++) {
    at = record.indexOf(" ", at) + 1;
    if (at === 0) return null;
  }
  return record.slice(at);
}

/**
 * A git work tree's fingerprint (root: its top level), null on any error or
 * when aborted. `git status --porcelain=v2` names every changed, staged and
 * untracked file with the HEAD and index blob ids; the content of each one
 * listed is hashed here, which tells every state the tracked diff would
 * (the diff is a function of those blobs and that content) for one git
 * process instead of two.
 */
export async function gitFingerprint(
  root: string,
  run: GitRunner,
  signal: AbortSignal,
): Promise<string | null> {
  const status = createHash("sha256");
  const listed: string[] = [];
  let partial = "";
  const res = await run(
    ["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames"],
    root,
    (chunk) => {
      // Records end in NUL. The upstream and ahead/behind headers move on a
      // fetch, which changes nothing here; the head commit (branch.oid) stays in.
      const recs = (partial + chunk.toString("utf8")).split("\0");
      partial = recs.pop() ?? "";
      for (const r of recs) {
        if (r.startsWith("# branch.upstream") || r.startsWith("# branch.ab")) continue;
        status.update(`${r}\0`);
        const path = listed.length < MAX_CHANGED ? pathOf(r) : null;
        if (path) listed.push(path);
      }
    },
    signal,
  );
  if (res.code !== 0) return null;
  const files = createHash("sha256");
  for (const rel of listed.sort()) {
    if (signal.aborted) return null;
    files.update(`${rel}\0${await fileState(resolve(root, rel), signal)}\0`);
  }
  if (signal.aborted) return null;
  return combine(status, files);
}

function combine(...parts: Hash[]): string {
  const all = createHash("sha256");
  for (const p of parts) all.update(p.digest("hex"));
  return all.digest("hex").slice(0, 32);
}

/** Outside git: the state of the named files (relative to dir), or null when the command names none. */
export async function filesFingerprint(
  dir: string,
  paths: readonly string[],
  signal: AbortSignal,
): Promise<string | null> {
  if (paths.length === 0) return null;
  const h = createHash("sha256");
  for (const p of paths) {
    if (signal.aborted) return null;
    h.update(`${p}\0${await fileState(resolve(dir, p), signal)}\0`);
  }
  return signal.aborted ? null : h.digest("hex").slice(0, 32);
}

/** The files a command names that a files fingerprint covers: what it writes, else what it mentions. */
export function namedFiles(command: string, directory: string): string[] {
  const writes = bashWrites(command, directory).filter((p) => !p.startsWith("("));
  const named = writes.length > 0 ? writes : referencedFiles(command);
  return [...new Set(named)]
    .filter((p) => !p.startsWith("~") && !p.includes("$"))
    .sort()
    .slice(0, MAX_NAMED);
}

function inside(directory: string, path: string): boolean {
  const rel = relative(directory, path);
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/**
 * Where the command works, as far as the text says: "here" (the instance
 * directory), "inside" (cd or -C into a subdirectory), or "unknown" (it
 * leaves the directory, or goes somewhere a variable or ~ names). A probe of
 * the instance directory only answers for "here" and, in git, "inside".
 */
export function commandPlace(
  command: string,
  directory: string,
  workdir?: string,
): "here" | "inside" | "unknown" {
  let place: "here" | "inside" = "here";
  const targets: string[] = [];
  if (workdir) targets.push(workdir);
  for (const words of segments(command)) {
    const w0 = words[0] ?? "";
    if (w0 === "cd" || w0 === "pushd") targets.push(words.find((w, i) => i > 0 && !w.startsWith("-")) ?? "~");
    if (w0 === "git") {
      for (let i = 1; i < words.length - 1; i++) if (words[i] === "-C") targets.push(words[i + 1] as string);
    }
  }
  for (const t of targets) {
    if (t.startsWith("~") || t.includes("$") || t === "-") return "unknown";
    const abs = resolve(directory, t);
    if (!inside(directory, abs)) return "unknown";
    if (abs !== resolve(directory)) place = "inside";
  }
  return place;
}
