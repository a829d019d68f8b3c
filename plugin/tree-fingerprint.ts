// What the probe (worktree-probe.ts) sees of a work tree. In git: a snapshot
// from one `git status --porcelain=v2`: the head commit and every changed,
// staged or untracked file with its content hash and last-modified time (the
// time tells whether the bash call or someone else wrote it, see
// shared/tree-credit.ts). Outside git: the state (content hash, or size and
// mtime for big files) of the files a command names. Nothing read here is
// kept but hashes and times; file contents go straight into the hash.
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { lstat, readFile } from "node:fs/promises";
import { isAbsolute, relative, resolve } from "node:path";
import { referencedFiles, segments } from "../shared/bash-command.ts";
import type { BashLanding } from "../shared/bash-landing.ts";
import { isRunOutput } from "../shared/run-output.ts";

/** Runs git with args in cwd, streaming stdout to onData; code null when killed or not started. */
export type GitRunner = (
  args: readonly string[],
  cwd: string,
  onData: (chunk: Buffer) => void,
  signal: AbortSignal,
) => Promise<{ code: number | null; stderr: string }>;

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

/** One file's state as a probe sees it: its content (or size, mtime, mode) and when it was last written. */
export interface FileLook {
  /** `c:<sha256>:<mode>`, `s:<size>:<mtime>:<mode>` for big or special files, or `absent`. */
  state: string;
  /** Last modification, wall clock ms; null when absent. */
  mtimeMs: number | null;
  /** The file system keeps whole seconds only (no fraction in the mtime). */
  coarse: boolean;
  /** When the file was created, wall clock ms; null when absent or the file system does not say. */
  bornMs: number | null;
}

const ABSENT: FileLook = { state: "absent", mtimeMs: null, coarse: false, bornMs: null };

type BigStats = Awaited<ReturnType<typeof lstatBig>>;
const lstatBig = (path: string) => lstat(path, { bigint: true });
const ms = (ns: bigint) => Number(ns / 1_000_000n) + Number(ns % 1_000_000n) / 1e6;

/** A look's times: last write and creation (0 from the file system means it does not keep one). */
function timesOf(st: BigStats): Omit<FileLook, "state"> {
  return {
    mtimeMs: ms(st.mtimeNs),
    coarse: st.mtimeNs % 1_000_000_000n === 0n,
    bornMs: st.birthtimeNs > 0n ? ms(st.birthtimeNs) : null,
  };
}

/** One file's look: absent, its content hash, or (big or special) size and mtime. */
export async function lookFile(path: string, signal: AbortSignal): Promise<FileLook> {
  try {
    const st = await lstatBig(path);
    const times = timesOf(st);
    const mode = Number(st.mode).toString(8);
    if (!st.isFile() || st.size > MAX_CONTENT_BYTES)
      return { state: `s:${st.size}:${st.mtimeNs}:${mode}`, ...times };
    if (signal.aborted) return ABSENT;
    const hash = createHash("sha256")
      .update(await readFile(path))
      .digest("hex");
    return { state: `c:${hash}:${mode}`, ...times };
  } catch {
    return ABSENT;
  }
}

/** A file's times only (the reflog, whose content is not the project's); null when absent. */
export async function lookTime(path: string): Promise<FileLook | null> {
  try {
    return { state: "", ...timesOf(await lstatBig(path)) };
  } catch {
    return null;
  }
}

/** Where a directory's work tree is: its top level and its git directory (null when git did not say). */
export interface GitPlace {
  root: string;
  gitDir: string | null;
}

/** The work tree's place, "not-git" when dir is not inside a work tree, null on any other error. */
export async function gitPlace(
  dir: string,
  run: GitRunner,
  signal: AbortSignal,
): Promise<GitPlace | "not-git" | null> {
  let out = "";
  const res = await run(
    ["rev-parse", "--show-toplevel", "--absolute-git-dir"],
    dir,
    (b) => (out += b.toString("utf8")),
    signal,
  );
  const [root, gitDir] = out.split("\n").map((l) => l.trim());
  if (res.code === 0 && root) return { root, gitDir: gitDir || null };
  return res.code === 128 && /not a git repository/i.test(res.stderr) ? "not-git" : null;
}

/** The work tree's root, "not-git" when dir is not inside a work tree, null on any other error. */
export async function gitRoot(dir: string, run: GitRunner, signal: AbortSignal): Promise<string | null> {
  const place = await gitPlace(dir, run, signal);
  return place === null || place === "not-git" ? place : place.root;
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
 * What a probe saw of a git work tree: the head commit and every changed,
 * staged or untracked file `git status --porcelain=v2` lists, with its
 * content state and last-modified time; and the files asked about in `also`
 * that it no longer lists (to tell a commit from a change).
 */
export interface TreeSnapshot {
  head: string;
  files: Map<string, FileLook>;
  unlisted: Map<string, FileLook>;
  /** Wall clock ms when git status started. */
  at: number;
}

/**
 * A git work tree's snapshot (root: its top level), null on any error or when
 * aborted. `also`: paths listed last time, read again when no longer listed.
 */
export async function gitSnapshot(
  root: string,
  run: GitRunner,
  signal: AbortSignal,
  also: Iterable<string> = [],
  wall: () => number = Date.now,
): Promise<TreeSnapshot | null> {
  const at = wall();
  let head = "";
  const listed: string[] = [];
  let partial = "";
  const res = await run(
    ["status", "--porcelain=v2", "-z", "--branch", "--untracked-files=all", "--no-renames"],
    root,
    (chunk) => {
      // Records end in NUL. Only the head commit (branch.oid) matters of the headers.
      const recs = (partial + chunk.toString("utf8")).split("\0");
      partial = recs.pop() ?? "";
      for (const r of recs) {
        if (r.startsWith("# branch.oid ")) head = r.slice(13);
        const path = listed.length < MAX_CHANGED ? pathOf(r) : null;
        if (path) listed.push(path);
      }
    },
    signal,
  );
  if (res.code !== 0) return null;
  const files = new Map<string, FileLook>();
  for (const rel of listed.sort()) {
    if (signal.aborted) return null;
    files.set(rel, await lookFile(resolve(root, rel), signal));
  }
  const unlisted = new Map<string, FileLook>();
  for (const rel of also) {
    if (files.has(rel)) continue;
    if (signal.aborted || unlisted.size >= MAX_CHANGED) break;
    unlisted.set(rel, await lookFile(resolve(root, rel), signal));
  }
  return signal.aborted ? null : { head, files, unlisted, at };
}

/** A snapshot's fingerprint: the head and the state of every file listed. */
export async function gitFingerprint(
  root: string,
  run: GitRunner,
  signal: AbortSignal,
): Promise<string | null> {
  const snap = await gitSnapshot(root, run, signal);
  if (!snap) return null;
  const h = createHash("sha256").update(`${snap.head}\0`);
  for (const [p, f] of snap.files) h.update(`${p}\0${f.state}\0`);
  return h.digest("hex").slice(0, 32);
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
    h.update(`${p}\0${(await lookFile(resolve(dir, p), signal)).state}\0`);
  }
  return signal.aborted ? null : h.digest("hex").slice(0, 32);
}

/**
 * The files a command names that a files fingerprint covers: the edits it
 * names, else (it runs something) what it mentions; never its run output.
 * None when it cannot land.
 */
export function namedFiles(command: string, landing: BashLanding): string[] {
  if (!landing.can) return [];
  const output = new Set(landing.outputs);
  const named =
    landing.edits.length > 0 && !landing.unnamed
      ? landing.edits
      : [...landing.edits, ...referencedFiles(command)].filter((p) => !output.has(p) && !isRunOutput(p));
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

/** The directory a command runs in: its workdir, else the directory its leading `cd` goes to. */
export function commandCwd(command: string, directory: string, workdir?: string): string {
  if (workdir) return resolve(directory, workdir);
  const first = segments(command)[0] ?? [];
  const to = first[0] === "cd" ? first.find((w, i) => i > 0 && !w.startsWith("-")) : undefined;
  return to ? resolve(directory, to) : resolve(directory);
}
