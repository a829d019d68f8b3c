// One session's rolling state: the last N tool events with incremental counts,
// what landed, what repeats. Repetition is evidence only inside one stretch
// without a landed change (the spec's "duplicates PLUS no landed change"): a
// landing, a descendant's landing or a real user message starts a new
// stretch and clears the window, the failure streaks and the whole-session
// counts. Memory is bounded however long the session runs: the window holds
// N slots, every other map is capped.
import { blankSignals } from "./blank-signals.ts";
import { BoundedMap } from "./bounded-map.ts";
import { CallWindow, type Label, repeat, type WindowCall } from "./call-window.ts";
import { type JudgeInput, judge } from "./judge.ts";
import { LandingMemory } from "./landing.ts";
import type { Policy } from "./policy.ts";
import { toolEvent } from "./tool-event.ts";
import { TopK } from "./top-k.ts";
import {
  type Judgement,
  type RepeatInfo,
  type Signals,
  type ToolCall,
  type ToolEvent,
  type TurnObservation,
  type UsageObservation,
  type UserObservation,
  VERDICT_RANK,
} from "./types.ts";

/** Consecutive novel, successful calls that clear a read-only agent's flag. */
const RO_CLEAR_RUN = 5;
/**
 * What a repeat with a changed result counts for in the repeat share (a repeat
 * with the same result counts 1). Below every sensible dup_warn, so a stream
 * of only changing-result repeats (polling a build that moves) never reaches
 * the threshold alone: its share tends to this value.
 */
const WEAK = 0.25;

export class SessionTracker {
  parentId: string | null;
  lastActivity = 0;

  private agentSlug: string;
  /** Whether the agent is read-only, kept with the agent (judging asks on every observation). */
  private ro: boolean;
  private judgement: Judgement = { verdict: "ok", reason: null };
  /** Bumped by every change to what signals() or evaluate() read; judgedVersion is the one lastVerdict was set at. */
  private version = 0;
  private judgedVersion = -1;

  private readonly window: CallWindow;
  private readonly landing = new LandingMemory();
  private readonly seenTargets = new BoundedMap<string, true>(4096);
  private readonly usageSeen = new BoundedMap<string, true>(256);
  private readonly userTexts = new BoundedMap<string, true>(64);
  /** Both report repeats only (a call seen once is never shown), so a stream of new calls leaves their answer alone. */
  private readonly cumSinceLanded = new TopK<Label>(32, { atLeast: 2 });
  private readonly sessionTop = new TopK<Label>(32, { atLeast: 2 });
  /** cumRepeat and mostRepeated, each made again only when its top-k's answer changed. */
  private cumRepeat: RepeatInfo | null = null;
  private cumAt = -1;
  private mostRepeated: RepeatInfo[] = [];
  private mostAt = -1;
  /** What is judged on every observation, written in place (signals() hands out fresh ones). */
  private readonly scratch: JudgeInput = blankSignals();

  private calls = 0;
  private landed = 0;
  private turns = 0;
  private failures = 0;
  private callsSinceLanded = 0;
  private turnsSinceLanded = 0;
  private usdSinceLanded = 0;
  private promptTokensSinceLanded = 0;
  private usdTotal = 0;
  private contextTokens = 0;
  private maxContextTokens = 0;
  private injectedSinceLanded = 0;
  private injectedTotal = 0;
  private compactions = 0;
  private callsSinceNovel = 0;
  private novelRun = 0;
  private lastLandedAt: number | null = null;
  private sticky: Judgement = { verdict: "ok", reason: null };

  constructor(
    readonly id: string,
    parentId: string | null,
    agent: string,
    private readonly policy: Policy,
  ) {
    this.parentId = parentId;
    this.agentSlug = agent;
    this.ro = policy.readOnlyAgents.has(agent);
    this.window = new CallWindow(policy.thresholds.window);
  }

  /** The agent's slug; a change can change the verdict (read-only agents are judged apart). */
  get agent(): string {
    return this.agentSlug;
  }

  set agent(slug: string) {
    if (slug === this.agentSlug) return;
    this.agentSlug = slug;
    this.ro = this.policy.readOnlyAgents.has(slug);
    this.version++;
  }

  /** The verdict last handed out by evaluate(), for transition detection by the owner. */
  get lastVerdict(): Judgement {
    return this.judgement;
  }

  set lastVerdict(j: Judgement) {
    this.judgement = j;
    this.judgedVersion = this.version;
  }

  /**
   * Whether anything evaluate() reads changed since lastVerdict was set. When
   * not, evaluate() would answer lastVerdict again (it is idempotent on one
   * state), so an owner may skip it: an ancestor of a session that only made
   * a call, most of the time.
   */
  get changedSinceJudged(): boolean {
    return this.version !== this.judgedVersion;
  }

  get readOnly(): boolean {
    return this.ro;
  }

  /** Records a finished tool call and decides whether it landed. */
  recordCall(call: ToolCall): ToolEvent {
    this.version++;
    this.touch(call.time);
    const { landed, reverted } = this.landing.decide(call);
    const targetKey = `${call.tool}\u0000${call.target}`;
    const novel = !this.seenTargets.mark(targetKey, true);
    // The window's record of the call, and its label in the top-k counts.
    const slot: WindowCall = {
      fp: call.fp,
      nfp: call.nfp,
      same: `${call.nfp}\u0000${call.outcome ?? ""}`,
      targetKey,
      tool: call.tool,
      target: call.target,
      failed: call.failed,
      novel,
      reverted,
    };

    this.calls++;
    if (call.failed) this.failures++;
    this.callsSinceNovel = novel ? 0 : this.callsSinceNovel + 1;
    this.novelRun = novel && !call.failed ? this.novelRun + 1 : 0;
    this.sessionTop.add(call.nfp, slot);
    if (landed) {
      // The landing ends the stretch: it is not evidence in the next one.
      this.landed++;
      this.markLanded(call.time);
    } else {
      this.window.push(slot);
      this.callsSinceLanded++;
      this.cumSinceLanded.add(slot.same, slot);
    }
    return toolEvent(call, landed, reverted, novel);
  }

  private markLanded(time: number): void {
    this.lastLandedAt = time;
    this.newStretch();
  }

  /**
   * Starts a stretch: evidence from before a landing (or before a person
   * spoke) says nothing about the work after it, so the window, the failure
   * streaks and the counts since landed start over, and a flag is lifted.
   */
  private newStretch(): void {
    this.version++;
    this.window.clear();
    this.callsSinceLanded = 0;
    this.turnsSinceLanded = 0;
    this.usdSinceLanded = 0;
    this.promptTokensSinceLanded = 0;
    this.injectedSinceLanded = 0;
    this.cumSinceLanded.clear();
    if (!this.readOnly) this.sticky = { verdict: "ok", reason: null };
  }

  /** A descendant session landed a change: an orchestrator's progress is its workers'. */
  descendantLanded(time: number): void {
    this.markLanded(time);
  }

  recordTurn(turn: TurnObservation): void {
    this.version++;
    this.touch(turn.time);
    this.turns++;
    this.turnsSinceLanded++;
  }

  descendantTurn(): void {
    this.version++;
    this.turnsSinceLanded++;
  }

  /** Returns false for a message already counted (usage arrives again on updates). */
  recordUsage(u: UsageObservation): boolean {
    if (this.usageSeen.has(u.messageId)) return false;
    this.usageSeen.set(u.messageId, true);
    this.touch(u.time);
    this.addSpend(u.costUsd, u.promptTokens);
    this.usdTotal += u.costUsd;
    if (u.contextTokens > 0) {
      this.contextTokens = u.contextTokens;
      this.maxContextTokens = Math.max(this.maxContextTokens, u.contextTokens);
    }
    return true;
  }

  descendantUsage(costUsd: number, promptTokens: number): void {
    this.addSpend(costUsd, promptTokens);
  }

  private addSpend(costUsd: number, promptTokens: number): void {
    this.version++;
    this.usdSinceLanded += costUsd;
    this.promptTokensSinceLanded += promptTokens;
  }

  /**
   * A user turn: an injected continuation is evidence; a person steering
   * (new words, not a nudge sent again) starts a new stretch.
   */
  recordUser(u: UserObservation): void {
    this.version++;
    this.touch(u.time);
    const repeated = !!u.textHash && this.userTexts.mark(u.textHash, true);
    if (u.injected || repeated) {
      this.injectedSinceLanded++;
      this.injectedTotal++;
    } else {
      this.sticky = { verdict: "ok", reason: null };
      this.newStretch();
    }
  }

  recordCompaction(time: number): void {
    this.version++;
    this.touch(time);
    this.compactions++;
  }

  private touch(time: number): void {
    if (time > this.lastActivity) this.lastActivity = time;
  }

  /** The whole-session repeat since landed; made again only when the top-k's answer changed. */
  private cumRepeatNow(): RepeatInfo | null {
    if (this.cumAt !== this.cumSinceLanded.revision) {
      const cum = this.cumSinceLanded.max();
      this.cumRepeat = cum ? repeat(cum.label, cum.count) : null;
      this.cumAt = this.cumSinceLanded.revision;
    }
    return this.cumRepeat;
  }

  private mostRepeatedNow(): RepeatInfo[] {
    if (this.mostAt !== this.sessionTop.revision) {
      this.mostRepeated = this.sessionTop
        .top(3)
        .filter((e) => e.count > 1)
        .map((e) => ({ tool: e.label.tool, target: e.label.target, count: e.count }));
      this.mostAt = this.sessionTop.revision;
    }
    return this.mostRepeated;
  }

  signals(): Signals {
    return this.write(blankSignals(), [...this.mostRepeatedNow()]);
  }

  /**
   * What the verdict reads now, in one object reused by every call: valid
   * until the tracker changes, not to be kept (signals() is the one to keep).
   */
  signalsToJudge(): JudgeInput {
    return this.writeJudged(this.scratch);
  }

  private writeJudged(s: JudgeInput): JudgeInput {
    const w = this.window;
    const n = w.size;
    const r = w.repeats();
    s.turns = this.turns;
    s.turnsSinceLanded = this.turnsSinceLanded;
    s.callsSinceLanded = this.callsSinceLanded;
    s.usdSinceLanded = this.usdSinceLanded;
    s.windowSize = n;
    s.repeatShare = n ? (1 - w.distinctSame / n) * (1 - WEAK) + (1 - w.distinctNfp / n) * WEAK : 0;
    s.failStreak = r.failStreak;
    s.flipFlops = w.reverted;
    s.topSame = r.topSame;
    s.inARow = r.inARow;
    s.cycle = r.cycle;
    s.retrace = r.retrace;
    s.cumRepeat = this.cumRepeatNow();
    s.injectedSinceLanded = this.injectedSinceLanded;
    s.novelty = n ? w.novel / n : 1;
    s.callsSinceNovel = this.callsSinceNovel;
    s.readOnly = this.readOnly;
    return s;
  }

  /** Every signal: what the verdict reads, and the rest for the report. */
  private write(s: Signals, mostRepeated: RepeatInfo[]): Signals {
    this.writeJudged(s);
    const w = this.window;
    const n = w.size;
    const r = w.repeats();
    s.calls = this.calls;
    s.landed = this.landed;
    s.failures = this.failures;
    s.promptTokensSinceLanded = this.promptTokensSinceLanded;
    s.usdTotal = this.usdTotal;
    s.dupShare = n ? 1 - w.distinctFp / n : 0;
    s.ndupShare = n ? 1 - w.distinctNfp / n : 0;
    s.sameShare = n ? 1 - w.distinctSame / n : 0;
    s.failTarget = r.failTarget;
    s.contextTokens = this.contextTokens;
    s.maxContextTokens = this.maxContextTokens;
    s.busiestTarget = r.busiestTarget;
    s.busiestTargetCount = r.busiestTargetCount;
    s.topRepeat = r.topRepeat;
    s.mostRepeated = mostRepeated;
    s.injectedTotal = this.injectedTotal;
    s.compactions = this.compactions;
    s.lastLandedAt = this.lastLandedAt;
    return s;
  }

  /**
   * The verdict now. A flag sticks until something lands (for a read-only
   * agent: until it explores new targets again), so a session that is still
   * stuck does not flap between ok and stalling.
   */
  evaluate(signals: JudgeInput = this.signals()): Judgement {
    const now = judge(signals, this.policy.thresholds);
    if (
      this.readOnly &&
      this.sticky.verdict !== "ok" &&
      now.verdict === "ok" &&
      this.novelRun >= RO_CLEAR_RUN
    ) {
      this.sticky = now;
    }
    if (VERDICT_RANK[now.verdict] > VERDICT_RANK[this.sticky.verdict]) this.sticky = now;
    return this.sticky;
  }
}
