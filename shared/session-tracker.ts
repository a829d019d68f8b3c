// One session's rolling state: the last N tool events with incremental counts,
// what landed, what repeats. Repetition is evidence only inside one stretch
// without a landed change (the spec's "duplicates PLUS no landed change"): a
// landing, a descendant's landing or a real user message starts a new
// stretch and clears the window, the failure streaks and the whole-session
// counts. Memory is bounded however long the session runs: the window holds
// N slots, every other map is capped.
import { BoundedMap } from "./bounded-map.ts";
import { bump, maxEntry } from "./counts.ts";
import { CycleTracker } from "./cycle.ts";
import { FailStreaks } from "./fail-streaks.ts";
import { judge } from "./judge.ts";
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

interface Slot {
  seq: number;
  fp: string;
  nfp: string;
  /** The normalized call with its answer: equal keys are the same call with the same result. */
  same: string;
  targetKey: string;
  tool: string;
  target: string;
  failed: boolean;
  novel: boolean;
  reverted: boolean;
}

interface Label {
  tool: string;
  target: string;
}

type WindowSignals = Pick<
  Signals,
  | "failStreak"
  | "failTarget"
  | "busiestTarget"
  | "busiestTargetCount"
  | "topRepeat"
  | "topSame"
  | "cumRepeat"
  | "cycle"
  | "inARow"
  | "retrace"
  | "mostRepeated"
>;

/** Consecutive novel, successful calls that clear a read-only agent's flag. */
const RO_CLEAR_RUN = 5;
/**
 * What a repeat with a changed result counts for in the repeat share (a repeat
 * with the same result counts 1). Below every sensible dup_warn, so a stream
 * of only changing-result repeats (polling a build that moves) never reaches
 * the threshold alone: its share tends to this value.
 */
const WEAK = 0.25;

/** A repeat worth reporting (seen more than once); module level, not a closure per signals() call. */
function repeat(label: Label | undefined, count: number): RepeatInfo | null {
  return label && count > 1 ? { tool: label.tool, target: label.target, count } : null;
}

export class SessionTracker {
  parentId: string | null;
  agent: string;
  lastActivity = 0;
  /** The verdict last handed out by evaluate(), for transition detection by the owner. */
  lastVerdict: Judgement = { verdict: "ok", reason: null };

  private readonly ring: Array<Slot | undefined>;
  private head = 0;
  private size = 0;
  private seq = 0;
  private readonly fpCount = new Map<string, number>();
  private readonly nfpCount = new Map<string, number>();
  private readonly sameCount = new Map<string, number>();
  private readonly targetCount = new Map<string, number>();
  private readonly labels = new Map<string, Label>();
  private readonly streaks = new FailStreaks();
  private readonly cycle = new CycleTracker();
  private readonly landing = new LandingMemory();
  private readonly seenTargets = new BoundedMap<string, true>(4096);
  private readonly usageSeen = new BoundedMap<string, true>(256);
  private readonly userTexts = new BoundedMap<string, true>(64);
  private readonly cumSinceLanded = new TopK<Label>(32);
  private readonly sessionTop = new TopK<Label>(32);
  /** Bumped by every change to the window, its maps or the top-k (see windowSignals). */
  private windowVersion = 0;
  private cachedAt = -1;
  private cached: WindowSignals | null = null;
  private novelInWindow = 0;
  private revertedInWindow = 0;

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
    this.agent = agent;
    this.ring = new Array(policy.thresholds.window);
  }

  get readOnly(): boolean {
    return this.policy.readOnlyAgents.has(this.agent);
  }

  /** Records a finished tool call and decides whether it landed. */
  recordCall(call: ToolCall): ToolEvent {
    this.windowVersion++;
    this.touch(call.time);
    this.seq++;
    const { landed, reverted } = this.landing.decide(call);
    const targetKey = `${call.tool}\u0000${call.target}`;
    const novel = !this.seenTargets.has(targetKey);
    this.seenTargets.set(targetKey, true);
    const same = `${call.nfp}\u0000${call.outcome ?? ""}`;

    this.calls++;
    if (call.failed) this.failures++;
    this.callsSinceNovel = novel ? 0 : this.callsSinceNovel + 1;
    this.novelRun = novel && !call.failed ? this.novelRun + 1 : 0;
    const label = { tool: call.tool, target: call.target };
    this.sessionTop.add(call.nfp, label);
    if (landed) {
      // The landing ends the stretch: it is not evidence in the next one.
      this.landed++;
      this.markLanded(call.time);
    } else {
      this.push({
        seq: this.seq,
        fp: call.fp,
        nfp: call.nfp,
        same,
        targetKey,
        tool: call.tool,
        target: call.target,
        failed: call.failed,
        novel,
        reverted,
      });
      this.streaks.record(call.fp, call.nfp, call.failed);
      this.cycle.push(same, call.tool, call.target);
      this.callsSinceLanded++;
      this.cumSinceLanded.add(same, label);
    }
    return toolEvent(call, landed, reverted, novel);
  }

  private push(slot: Slot): void {
    const cap = this.ring.length;
    if (this.size === cap) {
      const old = this.ring[this.head] as Slot;
      bump(this.fpCount, old.fp, -1);
      bump(this.nfpCount, old.nfp, -1);
      bump(this.sameCount, old.same, -1);
      bump(this.targetCount, old.targetKey, -1);
      if (!this.nfpCount.has(old.nfp)) this.labels.delete(old.nfp);
      if (!this.fpCount.has(old.fp)) this.streaks.forget(old.fp);
      if (old.novel) this.novelInWindow--;
      if (old.reverted) this.revertedInWindow--;
    } else {
      this.size++;
    }
    this.ring[this.head] = slot;
    this.head = (this.head + 1) % cap;
    bump(this.fpCount, slot.fp, 1);
    bump(this.nfpCount, slot.nfp, 1);
    bump(this.sameCount, slot.same, 1);
    bump(this.targetCount, slot.targetKey, 1);
    this.labels.set(slot.nfp, { tool: slot.tool, target: slot.target });
    if (slot.novel) this.novelInWindow++;
    if (slot.reverted) this.revertedInWindow++;
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
    this.windowVersion++;
    this.ring.fill(undefined);
    this.head = 0;
    this.size = 0;
    this.fpCount.clear();
    this.nfpCount.clear();
    this.sameCount.clear();
    this.targetCount.clear();
    this.labels.clear();
    this.streaks.clear();
    this.cycle.reset();
    this.novelInWindow = 0;
    this.revertedInWindow = 0;
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
    this.touch(turn.time);
    this.turns++;
    this.turnsSinceLanded++;
  }

  descendantTurn(): void {
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
    this.usdSinceLanded += costUsd;
    this.promptTokensSinceLanded += promptTokens;
  }

  /**
   * A user turn: an injected continuation is evidence; a person steering
   * (new words, not a nudge sent again) starts a new stretch.
   */
  recordUser(u: UserObservation): void {
    this.touch(u.time);
    const repeated = !!u.textHash && this.userTexts.has(u.textHash);
    if (u.textHash) this.userTexts.set(u.textHash, true);
    if (u.injected || repeated) {
      this.injectedSinceLanded++;
      this.injectedTotal++;
    } else {
      this.sticky = { verdict: "ok", reason: null };
      this.newStretch();
    }
  }

  recordCompaction(time: number): void {
    this.touch(time);
    this.compactions++;
  }

  private touch(time: number): void {
    if (time > this.lastActivity) this.lastActivity = time;
  }

  /**
   * The signals that only a tool call (or a landed change) can move: maxima over
   * the window's maps and the top-k. Cached until the next call or landing, so a
   * turn or usage observation (two of every three) does not rescan them.
   */
  private windowSignals(): WindowSignals {
    if (this.cached && this.cachedAt === this.windowVersion) return this.cached;
    const busiest = maxEntry(this.targetCount);
    const topNfp = maxEntry(this.nfpCount);
    const topSame = maxEntry(this.sameCount);
    const streak = this.streaks.max();
    const cum = this.cumSinceLanded.max();
    const topLabel = this.labelOf(topNfp?.[0]);
    this.cached = {
      failStreak: streak?.count ?? 0,
      failTarget: streak ? (this.labelOf(streak.nfp)?.target ?? null) : null,
      busiestTarget: busiest ? (busiest[0].split("\u0000")[1] ?? null) : null,
      busiestTargetCount: busiest?.[1] ?? 0,
      topRepeat: repeat(topLabel, topNfp?.[1] ?? 0),
      topSame: topSame ? repeat(this.labelOf(topSame[0].split("\u0000")[0]), topSame[1]) : null,
      cumRepeat: cum ? repeat(cum.label, cum.count) : null,
      cycle: this.cycle.current(),
      inARow: this.cycle.row(),
      retrace: this.cycle.retrace(),
      mostRepeated: this.sessionTop
        .top(3)
        .filter((e) => e.count > 1)
        .map((e) => ({ tool: e.label.tool, target: e.label.target, count: e.count })),
    };
    this.cachedAt = this.windowVersion;
    return this.cached;
  }

  private labelOf(key: string | undefined): Label | undefined {
    return key ? this.labels.get(key) : undefined;
  }

  signals(): Signals {
    const n = this.size;
    const w = this.windowSignals();
    return {
      calls: this.calls,
      landed: this.landed,
      turns: this.turns,
      failures: this.failures,
      callsSinceLanded: this.callsSinceLanded,
      turnsSinceLanded: this.turnsSinceLanded,
      usdSinceLanded: this.usdSinceLanded,
      promptTokensSinceLanded: this.promptTokensSinceLanded,
      usdTotal: this.usdTotal,
      windowSize: n,
      dupShare: n ? 1 - this.fpCount.size / n : 0,
      ndupShare: n ? 1 - this.nfpCount.size / n : 0,
      sameShare: n ? 1 - this.sameCount.size / n : 0,
      repeatShare: n ? (1 - this.sameCount.size / n) * (1 - WEAK) + (1 - this.nfpCount.size / n) * WEAK : 0,
      failStreak: w.failStreak,
      failTarget: w.failTarget,
      contextTokens: this.contextTokens,
      maxContextTokens: this.maxContextTokens,
      busiestTarget: w.busiestTarget,
      busiestTargetCount: w.busiestTargetCount,
      topRepeat: w.topRepeat,
      topSame: w.topSame,
      cumRepeat: w.cumRepeat,
      cycle: w.cycle,
      inARow: w.inARow,
      retrace: w.retrace,
      mostRepeated: [...w.mostRepeated],
      novelty: n ? this.novelInWindow / n : 1,
      callsSinceNovel: this.callsSinceNovel,
      injectedSinceLanded: this.injectedSinceLanded,
      injectedTotal: this.injectedTotal,
      flipFlops: this.revertedInWindow,
      compactions: this.compactions,
      lastLandedAt: this.lastLandedAt,
      readOnly: this.readOnly,
    };
  }

  /**
   * The verdict now. A flag sticks until something lands (for a read-only
   * agent: until it explores new targets again), so a session that is still
   * stuck does not flap between ok and stalling.
   */
  evaluate(signals: Signals = this.signals()): Judgement {
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
