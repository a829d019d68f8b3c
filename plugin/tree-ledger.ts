// The probe's memory of a git work tree between looks: the last snapshot
// (what changed since is diffed against it), the project state the agent's
// own changes made (what the core compares before and after a call, so a
// revert is told from new progress), and the paths lately written by someone
// else. Changes nobody credits (a dev server's files, run output, another
// agent's edits) never enter the project state, so they never make a call
// look productive.

import { join } from "node:path";
import type { BashLanding } from "../shared/bash-landing.ts";
import { BoundedMap } from "../shared/bounded-map.ts";
import { sha256 } from "../shared/hash.ts";
import { isRunOutput } from "../shared/run-output.ts";
import { creditChanges, inWindow, type TreeChange } from "../shared/tree-credit.ts";
import type { WorktreeAnswer } from "../shared/types.ts";
import { type FileLook, lookTime, type TreeSnapshot } from "./tree-fingerprint.ts";

/** The project state before and after a call, and hashes of the paths it changed ("HEAD": a commit). */
export type TreeAnswer = WorktreeAnswer;

/** The call a look answers for. */
export interface LookCall {
  landing: BashLanding;
  start: number;
  end: number;
  root: string;
  cwd: string;
}

/** A path written by someone else stays volatile this long after it was last seen so. */
const VOLATILE_MS = 10 * 60_000;
/** Files whose times a call's start reads (the last snapshot's listed files, first ones). */
const GAP_PATHS = 256;
const NEVER: BashLanding = { can: false, edits: [], unnamed: false, outputs: [], commits: false };

export class TreeLedger {
  private seen: TreeSnapshot | null = null;
  /** The last snapshot may be diffed for a call (false after a look that could not tell whose changes). */
  private usable = false;
  private readonly project = new Map<string, string>();
  private head = "";
  private readonly volatileUntil = new BoundedMap<string, number>(512);

  /** Paths the last snapshot listed (read again next time when no longer listed). */
  listed(): Iterable<string> {
    return this.seen?.files.keys() ?? [];
  }

  /** The last snapshot cannot credit the next call (a call was not probed, or overlapped another). */
  invalidate(): void {
    this.usable = false;
  }

  /**
   * A look with no call to answer for (at start, after an edit tool, after a
   * busy probe): changes ours (inside `windows`) enter the project state;
   * someone else's mark their paths volatile.
   */
  absorb(snap: TreeSnapshot, windows: ReadonlyArray<readonly [number, number]>, now: number): void {
    if (this.seen === null) {
      this.project.clear();
      for (const [p, f] of snap.files) if (!isRunOutput(p)) this.project.set(p, f.state);
      this.head = snap.head;
    } else {
      const changes = this.diff(snap);
      const { foreign } = creditChanges({ ...this.blank(), changes, others: windows, volatile: () => false });
      this.markVolatile(foreign, now);
      const skip = new Set(foreign);
      for (const c of changes) {
        if (c.content && !skip.has(c.path) && !isRunOutput(c.path) && !this.isVolatile(c.path, now))
          this.apply(c.path, snap);
      }
      this.head = snap.head;
    }
    this.seen = snap;
    this.usable = true;
  }

  /** A look after a bash call: the project state before and after what the call itself changed. */
  answer(
    snap: TreeSnapshot,
    call: LookCall,
    reflog: FileLook | null,
    windows: ReadonlyArray<readonly [number, number]>,
    now: number,
  ): TreeAnswer | null {
    if (this.seen === null || !this.usable) {
      this.absorb(snap, windows, now);
      return null;
    }
    const changes = this.diff(snap);
    const { credited, foreign } = creditChanges({
      ...call,
      changes,
      others: windows,
      volatile: (p) => this.isVolatile(p, now),
    });
    this.markVolatile(foreign, now);
    const before = this.fingerprint();
    for (const p of credited) this.apply(p, snap);
    const changed = credited.map((p) => sha256(p).slice(0, 16));
    if (snap.head !== this.seen.head && this.headIsCall(call, reflog)) {
      this.head = snap.head;
      changed.push("HEAD");
    }
    this.seen = snap;
    return { before, after: this.fingerprint(), changed };
  }

  /** A new head commit is the call's when the reflog was written while it ran (or, with no reflog, it may land). */
  private headIsCall(call: LookCall, reflog: FileLook | null): boolean {
    if (reflog === null || reflog.mtimeMs === null) return call.landing.can;
    return inWindow(reflog.mtimeMs, reflog.coarse, call.start, call.end);
  }

  private blank(): Omit<Parameters<typeof creditChanges>[0], "changes" | "volatile"> {
    return { landing: NEVER, start: 0, end: 0, root: "/", cwd: "/" };
  }

  /** What changed since the last snapshot; a path whose listing alone changed is no content change. */
  private diff(snap: TreeSnapshot): TreeChange[] {
    const seen = this.seen as TreeSnapshot;
    const since = (t: number | null) => t !== null && inWindow(t, false, seen.at, Infinity);
    const change = (path: string, content: boolean, now: FileLook): TreeChange => ({
      path,
      content,
      mtimeMs: now.mtimeMs,
      coarse: now.coarse,
      bornMs: since(now.bornMs) ? now.bornMs : null,
    });
    const out: TreeChange[] = [];
    for (const [path, now] of snap.files) {
      const was = seen.files.get(path);
      if (was?.state === now.state) continue;
      // Newly listed: changed content only if written since the last look (else git add, reset...).
      out.push(change(path, was !== undefined || now.mtimeMs === null || since(now.mtimeMs), now));
    }
    for (const [path, was] of seen.files) {
      const now = snap.files.has(path) ? undefined : snap.unlisted.get(path);
      if (now) out.push(change(path, now.state !== was.state, now));
    }
    return out;
  }

  /**
   * A quick look when a call starts (its before hook): a file the last
   * snapshot listed that was written since then, before the call and outside
   * our other calls, was written by someone else (a log or status file a
   * server keeps rewriting): volatile. Only times are read.
   */
  async gapLook(
    root: string,
    start: number,
    windows: ReadonlyArray<readonly [number, number]>,
    wall: () => number,
  ): Promise<void> {
    const seen = this.seen;
    if (!seen) return;
    const paths = [...seen.files.keys()].slice(0, GAP_PATHS);
    const looks = await Promise.all(paths.map(async (p) => [p, await lookTime(join(root, p))] as const));
    const foreign = looks.filter(([, l]) => {
      const t = l?.mtimeMs;
      if (t == null || t <= seen.at || inWindow(t, l?.coarse ?? false, start, Infinity)) return false;
      return !windows.some(([a, b]) => inWindow(t, l?.coarse ?? false, a, b));
    });
    this.markVolatile(
      foreign.map(([p]) => p),
      wall(),
    );
  }

  /** The project state takes the path as the snapshot has it (not listed: as committed). */
  private apply(path: string, snap: TreeSnapshot): void {
    const look = snap.files.get(path);
    if (look) this.project.set(path, look.state);
    else this.project.delete(path);
  }

  private fingerprint(): string {
    const entries = [...this.project].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return sha256(`${this.head}\u0000${entries.map(([p, s]) => `${p}\u0000${s}`).join("\u0001")}`).slice(
      0,
      32,
    );
  }

  private markVolatile(paths: readonly string[], now: number): void {
    for (const p of paths) this.volatileUntil.set(p, now + VOLATILE_MS);
  }

  private isVolatile(path: string, now: number): boolean {
    return (this.volatileUntil.get(path) ?? 0) > now;
  }
}
