// Did a bash call change the project? After a bash call that may land
// (shared/bash-landing.ts), the live sensor looks at the work tree off the
// tool path: in git, one `git status` snapshot (tree-fingerprint.ts) diffed
// against the last one, each changed file credited to the call or not by
// when it was written (shared/tree-credit.ts), the project state the
// agent's own changes made kept in tree-ledger.ts; the core gets that state
// before and after the call and counts a new one as landed, an earlier one
// as a revert. Outside git it is the state of the files the command names,
// read just before and after the call.
//
// Every probe is bounded: a timeout or an error gives no answer, and the core
// then falls back to the command's text, as replay does.
import { join } from "node:path";
import { type BashLanding, bashLanding } from "../shared/bash-landing.ts";
import { bashMayWrite } from "../shared/bash-may-write.ts";
import { sha256 } from "../shared/hash.ts";
import { realTimer, type Timer } from "./observation-queue.ts";
import {
  commandCwd,
  commandPlace,
  filesFingerprint,
  type GitPlace,
  type GitRunner,
  gitPlace,
  gitSnapshot,
  lookTime,
  namedFiles,
  spawnGit,
  type TreeSnapshot,
} from "./tree-fingerprint.ts";
import { type LookCall, type TreeAnswer, TreeLedger } from "./tree-ledger.ts";

export { type GitRunner, spawnGit } from "./tree-fingerprint.ts";
export type { TreeAnswer } from "./tree-ledger.ts";

export interface WorktreeProbeOptions {
  directory: string;
  run?: GitRunner;
  timer?: Timer;
  now?: () => number;
  /** The wall clock file times are compared with (Date.now; tests drive `now` by hand). */
  wall?: () => number;
  /** The test and lint commands of the policy: what they write is their output. */
  testPatterns?: readonly RegExp[];
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
/** Windows of ended calls kept until the next look (their writes are ours, not someone else's). */
const MAX_WINDOWS = 64;

/**
 * One directory's probe. Git work is serialized in arrival order, so each
 * bash call's diff starts from the state after everything before it.
 *
 * A look answers for one call only when nothing else that may write ran
 * while it was taken: another bash call or an edit that started after the
 * call ended, or was still running, could have put its own change into the
 * picture. Then there is no answer (and the next call gets none either),
 * never an answer that credits one call with another's change. A real
 * model's turn between two bash calls is far longer than a probe, so this
 * is the exception.
 */
export class WorktreeProbe {
  readonly directory: string;
  private readonly run: GitRunner;
  private readonly timer: Timer;
  private readonly now: () => number;
  private readonly wall: () => number;
  private readonly testPatterns: readonly RegExp[];
  readonly timeoutMs: number;
  private readonly maxPending: number;
  private chain: Promise<void> = Promise.resolve();
  private pending = 0;
  private refreshQueued = false;
  private readonly ledger = new TreeLedger();
  private mode: "git" | "files" | "unknown" = "unknown";
  /** When the directory was last found to be outside git. */
  private filesSince = 0;
  /** The work tree's place (undefined: not asked yet or the answer failed). */
  private place: GitPlace | "not-git" | undefined;
  private readonly priors = new Map<string, Promise<string | null>>();
  /** Calls that may write and have started, not ended: key -> start (now) and start (wall clock). */
  private readonly running = new Map<string, { at: number; wall: number }>();
  /** Windows (wall clock) of calls that may write and ended since the last look. */
  private windows: Array<readonly [number, number]> = [];
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
    this.wall = opts.wall ?? Date.now;
    this.testPatterns = opts.testPatterns ?? [];
    this.timeoutMs = opts.timeoutMs ?? 1500;
    this.maxPending = opts.maxPending ?? 4;
  }

  /** Looks at the tree after the probes queued so far: at start, and after an edit tool. */
  refresh(): void {
    this.recheckGit();
    if (this.closed || this.mode === "files" || this.refreshQueued) return;
    this.refreshQueued = true;
    const startsAt = this.starts;
    this.enqueue(async () => {
      this.refreshQueued = false;
      const snap = await this.snapshot();
      if (snap === null || snap === "not-git") return;
      this.absorb(snap, this.quiet(startsAt));
    });
  }

  /** A tool that may write is starting (tool.execute.before of an edit/write/patch tool). */
  started(sessionId: string, callId: string): void {
    this.starts++;
    const key = `${sessionId}\u0000${callId}`;
    this.running.delete(key);
    this.running.set(key, { at: this.now(), wall: this.wall() });
    if (this.running.size > 256) {
      const oldest = this.running.keys().next();
      if (!oldest.done) this.running.delete(oldest.value);
    }
  }

  /** It ended: its after hook, or its failed part (a tool that throws has no after hook). */
  ended(sessionId: string, callId: string): void {
    this.end(`${sessionId}\u0000${callId}`);
  }

  /**
   * tool.execute.before of a bash call: counts it as running when it may
   * write; outside git (or before the first probe has told), also reads the
   * state of the files it names. In git nothing is read here.
   */
  async before(sessionId: string, callId: string, command: string, workdir?: string): Promise<void> {
    if (this.closed || !bashMayWrite(command)) return;
    this.recheckGit();
    this.started(sessionId, callId);
    if (this.mode === "git") {
      this.gapLook(this.wall());
      return;
    }
    if (commandPlace(command, this.directory, workdir) !== "here") return;
    const paths = namedFiles(command, this.landing(command));
    if (paths.length === 0) return;
    const prior = this.bounded((signal) => filesFingerprint(this.directory, paths, signal));
    this.remember(sessionId, callId, prior);
    await prior;
  }

  /**
   * tool.execute.after of a bash call: null when there is nothing to wait for
   * (it cannot write, it works elsewhere, or the probe rests); otherwise the
   * answer, which is null when the call cannot land or the probe failed,
   * timed out or was not quiet.
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
    const start = this.running.get(key)?.wall;
    this.end(key);
    if (this.closed || !bashMayWrite(command)) return null;
    const place = commandPlace(command, this.directory, workdir);
    if (place === "unknown" || this.restFor > 0 || this.pending >= this.maxPending) {
      if (this.restFor > 0) this.restFor--;
      this.stats.skipped++;
      // This call may have changed the tree: the next look must not credit it to another call.
      this.enqueue(async () => this.ledger.invalidate());
      return null;
    }
    const startsAt = this.starts;
    if (this.mode === "files") {
      if (!prior || place !== "here") return null;
      return this.filesAnswer(command, prior, startsAt);
    }
    // Without its before hook (the plugin loaded mid-call) only the files it names can be credited.
    const end = this.wall();
    const window = { start: start ?? end, end };
    const files = prior && place === "here" ? () => this.filesAnswer(command, prior, startsAt) : null;
    // What the call may land is read in the queue, off the tool path.
    return new Promise((done) =>
      this.enqueue(async () => {
        const landing = this.landing(command);
        // A call that cannot land needs no look: its writes are in `windows`, so the next look knows them as ours.
        if (!landing.can) return done(null);
        this.stats.probes++;
        const call = { landing, ...window, cwd: commandCwd(command, this.directory, workdir) };
        done(await this.gitAnswer(call, startsAt, files));
      }),
    );
  }

  /** The queued look after a call (files: the answer outside git, when the call has one). */
  private async gitAnswer(
    call: Omit<LookCall, "root">,
    startsAt: number,
    files: (() => Promise<TreeAnswer | null>) | null,
  ): Promise<TreeAnswer | null> {
    const snap = await this.snapshot();
    if (snap === "not-git") return files ? files() : null;
    if (snap === null) {
      this.ledger.invalidate();
      return null;
    }
    if (!this.quiet(startsAt)) {
      this.absorb(snap, false);
      return null;
    }
    const place = this.place as GitPlace;
    const reflog = place.gitDir ? await lookTime(join(place.gitDir, "logs", "HEAD")) : null;
    const answer = this.ledger.answer(
      snap,
      { ...call, root: place.root },
      reflog,
      this.takeWindows(),
      this.wall(),
    );
    if (answer) this.stats.answers++;
    return answer;
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

  /** When a call that may write starts: a look at the listed files' times (tree-ledger.ts), queued. */
  private gapLook(start: number): void {
    const root = this.place && this.place !== "not-git" ? this.place.root : null;
    if (root) this.enqueue(() => this.ledger.gapLook(root, start, this.windows, this.wall), false);
  }

  private landing(command: string): BashLanding {
    return bashLanding(command, this.testPatterns, this.directory);
  }

  /** A call that may write ended: its window is kept until the next look. */
  private end(key: string): void {
    const run = this.running.get(key);
    if (!run) return;
    this.running.delete(key);
    this.windows.push([run.wall, this.wall()]);
    if (this.windows.length > MAX_WINDOWS) this.windows.shift();
  }

  private takeWindows(): Array<readonly [number, number]> {
    const out = this.windows;
    this.windows = [];
    return out;
  }

  /** A look with no call to answer for; one that was not quiet cannot credit the next call. */
  private absorb(snap: TreeSnapshot, quiet: boolean): void {
    const now = this.wall();
    const running = [...this.running.values()].map((r) => [r.wall, now] as const);
    this.ledger.absorb(snap, [...this.takeWindows(), ...running], now);
    if (!quiet) this.ledger.invalidate();
  }

  /** Outside git for a while: ask git again at the next probe (files priors are still taken meanwhile). */
  private recheckGit(): void {
    if (this.mode !== "files" || this.now() - this.filesSince < GIT_RECHECK_MS) return;
    this.mode = "unknown";
    this.place = undefined;
  }

  /** Nothing that may write started since startsAt, and nothing is still running. */
  private quiet(startsAt: number): boolean {
    let quiet = this.starts === startsAt;
    const now = this.now();
    for (const [key, run] of this.running) {
      if (now - run.at > STALE_MS) this.running.delete(key);
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
    const paths = namedFiles(command, this.landing(command));
    const after = await this.bounded((signal) => filesFingerprint(this.directory, paths, signal));
    if (after === null || !this.quiet(startsAt)) return null;
    return { before, after, changed: after === before ? [] : paths.map((p) => sha256(p).slice(0, 16)) };
  }

  private remember(sessionId: string, callId: string, prior: Promise<string | null>): void {
    this.priors.set(`${sessionId}\u0000${callId}`, prior);
    if (this.priors.size > 256) {
      const oldest = this.priors.keys().next();
      if (!oldest.done) this.priors.delete(oldest.value);
    }
  }

  /** A git snapshot of the directory's work tree, bounded; updates the mode and the rest counter. */
  private async snapshot(): Promise<TreeSnapshot | null | "not-git"> {
    if (this.closed) return null;
    let timedOut = false;
    const snap = await this.bounded(
      async (signal) => {
        // The top level once: porcelain paths are relative to it, whatever the directory.
        this.place ??= (await gitPlace(this.directory, this.run, signal)) ?? undefined;
        const place = this.place;
        if (place === undefined || place === "not-git") return place ?? null;
        return gitSnapshot(place.root, this.run, signal, this.ledger.listed(), this.wall);
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
    if (snap === "not-git" && this.mode !== "files") {
      this.mode = "files";
      this.filesSince = this.now();
    } else if (snap !== null && snap !== "not-git") this.mode = "git";
    return snap;
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

  /** Git work in arrival order, one at a time; a failed task never stops the chain. A gap look is not counted. */
  private enqueue(task: () => Promise<void>, counted = true): void {
    if (counted) this.pending++;
    this.chain = this.chain
      .then(task)
      .catch(() => undefined)
      .finally(() => {
        if (counted) this.pending--;
      });
  }
}
