// Which of the changes the live probe saw in the work tree a bash call made:
// a pure decision on values the probe gathers (the changed paths with their
// last-modified times, the call's start and end, the command's landing
// class). The probe cannot see who wrote a file, only when: a file last
// written before the call started or after it ended was written by someone
// else (a dev server, a watcher, a log, another agent), and a path seen being
// written that way is volatile for a while, so its changes during a later
// call are not credited either unless the call names the file.
import { isAbsolute, posix } from "node:path";
import type { BashLanding } from "./bash-landing.ts";
import { isRunOutput } from "./run-output.ts";

export interface TreeChange {
  /** Path relative to the work tree's top level. */
  path: string;
  /** Its content or mode changed (false: only its git status did, e.g. staged or committed). */
  content: boolean;
  /** Last modification time (wall clock ms); null when the file is gone. */
  mtimeMs: number | null;
  /** The file system keeps whole seconds only. */
  coarse: boolean;
  /** When it was created, if after the probe's last look (null: earlier, or not known). */
  bornMs?: number | null;
}

export interface CreditInput {
  landing: BashLanding;
  changes: readonly TreeChange[];
  /** The call ran between start (its before hook) and end (its after hook), wall clock ms. */
  start: number;
  end: number;
  /** Other calls of ours that may have written since the last look: their writes are not foreign. */
  others?: ReadonlyArray<readonly [number, number]>;
  /** The work tree's top level and the directory the command ran in (absolute). */
  root: string;
  cwd: string;
  /** Paths seen written by someone else lately. */
  volatile: (path: string) => boolean;
}

export interface Credit {
  /** Changed paths the call made (relative to the top level). */
  credited: string[];
  /** Changed paths someone else wrote (to mark volatile). */
  foreign: string[];
}

/** Timestamps lag the clock by up to a kernel tick; a whole-second file system by up to 2 s (FAT). */
const FINE_SLACK_MS = 25;
const COARSE_SLACK_MS = 2000;
const UNRESOLVED = /[*?[\]$~`{}]/;

const slackOf = (coarse: boolean) => (coarse ? COARSE_SLACK_MS : FINE_SLACK_MS);

/** The time t (a file's mtime) falls inside the call's window. */
export function inWindow(t: number, coarse: boolean, start: number, end: number): boolean {
  return t >= start - slackOf(coarse) && t <= end + slackOf(coarse);
}

/** A path as the command wrote it, relative to the top level; null when it cannot be told or lies outside. */
function resolveNamed(p: string, root: string, cwd: string): string | null {
  if (UNRESOLVED.test(p)) return null;
  const abs = isAbsolute(p) ? posix.normalize(p) : posix.join(cwd, p);
  const rel = posix.relative(root, abs);
  return rel.startsWith("..") || isAbsolute(rel) ? null : rel;
}

/** The path is one of `named` or under one (a directory named as a target). */
function under(path: string, named: readonly string[]): boolean {
  return named.some((n) => n === "" || path === n || path.startsWith(`${n}/`));
}

/** A write at time t (null: unknown) fell inside one of our calls' windows. */
function ours(t: number | null, coarse: boolean, windows: ReadonlyArray<readonly [number, number]>): boolean {
  return t !== null && windows.some(([a, b]) => inWindow(t, coarse, a, b));
}

/** Splits the changes the probe saw into the call's own (credited) and someone else's. */
export function creditChanges(input: CreditInput): Credit {
  const { landing, start, end, root, cwd } = input;
  const resolved = landing.edits.map((p) => resolveNamed(p, root, cwd));
  // An edit target the text does not pin down (a glob, a variable) is like an unnamed write.
  const unnamed = landing.unnamed || resolved.includes(null);
  const edits = resolved.filter((p): p is string => p !== null);
  const outputs = landing.outputs
    .map((p) => resolveNamed(p, root, cwd))
    .filter((p): p is string => p !== null);
  const credited: string[] = [];
  const foreign: string[] = [];
  for (const c of input.changes) {
    if (!c.content || isRunOutput(c.path) || under(c.path, outputs)) continue;
    // Created after the last look but before the call started: someone else made it.
    const born = c.bornMs != null && c.bornMs < start - slackOf(c.coarse) ? c.bornMs : null;
    const during = born === null && (c.mtimeMs === null || inWindow(c.mtimeMs, c.coarse, start, end));
    // A named target is the call's own whatever its time says (mv and cp -p keep an old one).
    if (landing.can && under(c.path, edits)) credited.push(c.path);
    else if (unnamed && during && !input.volatile(c.path)) credited.push(c.path);
    else if (!during && !ours(born ?? c.mtimeMs, c.coarse, input.others ?? [])) foreign.push(c.path);
  }
  return { credited, foreign };
}
