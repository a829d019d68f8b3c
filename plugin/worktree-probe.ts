// Did a bash call change the work tree? After a bash call that may write, the
// live sensor takes a cheap fingerprint of the work tree (tree-fingerprint.ts)
// off the tool path and hands {before, after} to the core, which counts a new
// state as a landed change and a return to an earlier one as a revert.
// `before` is the directory's baseline: taken at start, then the previous
// probe's answer, and retaken after every edit/write/patch tool so one
// session's edit is not credited to another session's next bash call. Outside
// git it is the state of the files the command names, read just before and
// after the call.
//
// Every probe is bounded: a timeout or an error gives no answer, and the core
// then falls back to its command heuristic.
import { bashMayWrite } from "../shared/bash-may-write.ts";
import { realTimer, type Timer } from "./observation-queue.ts";
import {
  commandPlace,
  filesFingerprint,
  type GitRunner,
  gitFingerprint,
  gitRoot,
  namedFiles,
  spawnGit,
  type TreeAnswer,
} from "./tree-fingerprint.ts";

export { type GitRunner, spawnGit, type TreeAnswer } from "./tree-fingerprint.ts";

export interface WorktreeProbeOptions {
  directory: string;
  run?: GitRunner;
  timer?: Timer;
  now?: () => number;
  /** Longest a fingerprint may take; then it gives no answer. */
  timeoutMs?: number;
  /** Probes waiting at most; a bash call beyond that gets no answer (and the baseline is retaken). */
  maxPending?: number;
}

/** After this many timeouts in a row the probe rests for REST_CALLS bash calls (a tree too big to probe). */
const TIMEOUTS_TO_REST = 3;
const REST_CALLS = 20;
/** A call that started and never ended (its end was lost) stops counting as running after this. */
const STALE_MS = 15 * 60_000;
/** A directory found outside git is asked again after this long (the agent may run `git init`). */
const GIT_RECHECK_MS = 60_000;

/**
 * One directory's probe. Git work is serialized in arrival order, so each
 * bash call's `before` is the state after everything before it.
 *
 * A fingerprint answers for one call only when nothing else that may write
 * ran while it was taken: another bash call or an edit that started after
 * the call ended, or was still running, could have put its own change into
 * the picture. Then there is no answer (and no baseline until the next
 * quiet probe), never an answer that credits one call with another's change.
 * A real model's turn between two bash calls is far longer than a probe, so
 * this is the exception.
 */
export class WorktreeProbe {
  readonly directory: string;
  private readonly run: GitRunner;
  private readonly timer: Timer;
  private readonly now: () => number;
  readonly timeoutMs: number;
  private readonly maxPending: number;
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private refreshQueued = false;
  private baseline: string | null = null;
  private mode: "git" | "files" | "unknown" = "unknown";
  /** When the directory was last found to be outside git. */
  private filesSince = 0;
  /** The work tree's top level (undefined: not asked yet or the answer failed). */
  private root: string | null | undefined;
  private readonly priors = new Map<string, Promise<string | null>>();
  /** Calls that may write and have started, not ended: key -> start time. */
  private readonly running = new Map<string, number>();
  /** Calls that may write started so far (a probe is quiet when none started during it). */
  private starts = 0;
  private timeoutsInRow = 0;
  private restFor = 0;
  private readonly aborts = new Set<AbortController>();
  private closed = false;
  readonly stats = { probes: 0, answers: 0, timeouts: 0, skipped: 0, busy: 0 };

  constructor(opts: WorktreeProbeOptions) {
    this.directory = opts.directory;
    this.run = opts.run ?? spawnGit;
    this.timer = opts.timer ?? realTimer;
    this.now = opts.now ?? Date.now;
    this.timeoutMs = opts.timeoutMs ?? 1500;
    this.maxPending = opts.maxPending ?? 4;
  }

  /** (Re)takes the baseline after the probes queued so far: at start, and after an edit tool. */
  refresh(): void {
    this.recheckGit();
    if (this.closed || this.mode === "files" || this.refreshQueued) return;
    this.refreshQueued = true;
    const startsAt = this.starts;
    this.enqueue(async () => {
      this.refreshQueued = false;
      const fp = await this.fingerprint();
      if (fp === "not-git") return;
      this.baseline = this.quiet(startsAt) ? fp : null;
    });
  }

  /** A tool that may write is starting (tool.execute.before of an edit/write/patch tool). */
  started(sessionId: string, callId: string): void {
    this.starts++;
    const key = `${sessionId}\u0000${callId}`;
    this.running.delete(key);
    this.running.set(key, this.now());
    if (this.running.size > 256) {
      const oldest = this.running.keys().next();
      if (!oldest.done) this.running.delete(oldest.value);
    }
  }

  /** It ended: its after hook, or its failed part (a tool that throws has no after hook). */
  ended(sessionId: string, callId: string): void {
    this.running.delete(`${sessionId}\u0000${callId}`);
  }

  /**
   * tool.execute.before of a bash call: counts it as running when it may
   * write; outside git (or before the first probe has told), also reads the
   * state of the files it names. In git the baseline is `before`.
   */
  async before(sessionId: string, callId: string, command: string, workdir?: string): Promise<void> {
    if (this.closed || !bashMayWrite(command)) return;
    this.recheckGit();
    this.started(sessionId, callId);
    if (this.mode === "git" || commandPlace(command, this.directory, workdir) !== "here") return;
    const paths = namedFiles(command, this.directory);
    if (paths.length === 0) return;
    const prior = this.bounded((signal) => filesFingerprint(this.directory, paths, signal));
    this.remember(sessionId, callId, prior);
    await prior;
  }

  /**
   * tool.execute.after of a bash call: null when there is nothing to wait for
   * (the command cannot write, it works elsewhere, or the probe rests);
   * otherwise the answer, which is null when the probe failed, timed out or
   * was not quiet.
   */
  after(
    sessionId: string,
    callId: string,
    command: string,
    workdir?: string,
  ): Promise<TreeAnswer | null> | null {
    const key = `${sessionId}\u0000${callId}`;
    const prior = this.priors.get(key);
    this.priors.delete(key);
    this.running.delete(key);
    if (this.closed || !bashMayWrite(command)) return null;
    const place = commandPlace(command, this.directory, workdir);
    if (place === "unknown" || this.restFor > 0 || this.pending >= this.maxPending) {
      if (this.restFor > 0) this.restFor--;
      this.stats.skipped++;
      // This call may have changed the tree: the next answer must not credit it to another call.
      this.enqueue(async () => {
        this.baseline = null;
      });
      return null;
    }
    const startsAt = this.starts;
    if (this.mode === "files") {
      if (!prior || place !== "here") return null;
      return this.filesAnswer(command, prior, startsAt);
    }
    this.stats.probes++;
    return new Promise((done) => {
      this.enqueue(async () => {
        const fp = await this.fingerprint();
        if (fp === "not-git") {
          done(prior && place === "here" ? await this.filesAnswer(command, prior, startsAt) : null);
          return;
        }
        const before = this.baseline;
        const quiet = this.quiet(startsAt);
        this.baseline = quiet ? fp : null;
        const answer = quiet && before !== null && fp !== null ? { before, after: fp } : null;
        if (answer) this.stats.answers++;
        done(answer);
      });
    });
  }

  /** Resolves when the probes queued so far are done (the bench and tests wait on it). */
  idle(): Promise<void> {
    return this.chain;
  }

  /** Stops running probes; later calls get no answer. */
  close(): void {
    this.closed = true;
    for (const c of this.aborts) c.abort();
    this.aborts.clear();
  }

  /** Outside git for a while: ask git again at the next probe (files priors are still taken meanwhile). */
  private recheckGit(): void {
    if (this.mode !== "files" || this.now() - this.filesSince < GIT_RECHECK_MS) return;
    this.mode = "unknown";
    this.root = undefined;
  }

  /** Nothing that may write started since startsAt, and nothing is still running. */
  private quiet(startsAt: number): boolean {
    let quiet = this.starts === startsAt;
    const now = this.now();
    for (const [key, at] of this.running) {
      if (now - at > STALE_MS) this.running.delete(key);
      else quiet = false;
    }
    if (!quiet) this.stats.busy++;
    return quiet;
  }

  private async filesAnswer(
    command: string,
    prior: Promise<string | null>,
    startsAt: number,
  ): Promise<TreeAnswer | null> {
    const before = await prior;
    if (before === null) return null;
    const paths = namedFiles(command, this.directory);
    const after = await this.bounded((signal) => filesFingerprint(this.directory, paths, signal));
    return after === null || !this.quiet(startsAt) ? null : { before, after };
  }

  private remember(sessionId: string, callId: string, prior: Promise<string | null>): void {
    this.priors.set(`${sessionId}\u0000${callId}`, prior);
    if (this.priors.size > 256) {
      const oldest = this.priors.keys().next();
      if (!oldest.done) this.priors.delete(oldest.value);
    }
  }

  /** The git fingerprint of the directory, bounded; updates the mode and the rest counter. */
  private async fingerprint(): Promise<string | null | "not-git"> {
    if (this.closed) return null;
    let timedOut = false;
    const fp = await this.bounded(
      async (signal) => {
        // The top level once: porcelain paths are relative to it, whatever the directory.
        this.root ??= await gitRoot(this.directory, this.run, signal);
        const root = this.root;
        if (root === null) this.root = undefined;
        if (root === null || root === "not-git") return root;
        return gitFingerprint(root, this.run, signal);
      },
      () => {
        timedOut = true;
      },
    );
    if (timedOut) {
      this.stats.timeouts++;
      if (++this.timeoutsInRow >= TIMEOUTS_TO_REST) {
        this.timeoutsInRow = 0;
        this.restFor = REST_CALLS;
      }
      return null;
    }
    this.timeoutsInRow = 0;
    if (fp === "not-git" && this.mode !== "files") {
      this.mode = "files";
      this.filesSince = this.now();
    } else if (fp !== null && fp !== "not-git") this.mode = "git";
    return fp;
  }

  /** Runs work with an abort signal that fires after timeoutMs (or on close); its answer or null. */
  private async bounded<T>(
    work: (signal: AbortSignal) => Promise<T | null>,
    onTimeout?: () => void,
  ): Promise<T | null> {
    const ctl = new AbortController();
    this.aborts.add(ctl);
    const cancel = this.timer(this.timeoutMs, () => {
      onTimeout?.();
      ctl.abort();
    });
    try {
      const out = await Promise.race([
        work(ctl.signal),
        new Promise<null>((r) => ctl.signal.addEventListener("abort", () => r(null), { once: true })),
      ]);
      return ctl.signal.aborted ? null : out;
    } catch {
      return null;
    } finally {
      cancel();
      this.aborts.delete(ctl);
    }
  }

  /** Git work in arrival order, one at a time; a failed task never stops the chain. */
  private enqueue(task: () => Promise<void>): void {
    this.pending++;
    this.chain = this.chain
      .then(task)
      .catch(() => undefined)
      .finally(() => {
        this.pending--;
      });
  }
}
