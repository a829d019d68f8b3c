// Plain values that flow through the detection core. Nothing here holds tool
// arguments, file contents or command output: only hashes, coarse targets,
// exit codes, booleans and counts.
import type { CycleInfo, RetraceInfo, RowInfo } from "./cycle.ts";

export type Verdict = "ok" | "stalling" | "looping";
export const VERDICT_RANK: Record<Verdict, number> = { ok: 0, stalling: 1, looping: 2 };

/** What a call did that may count as progress (decided for good by the tracker). */
export type Effect = "none" | "change" | "commit" | "test";

/** One finished tool call as an adapter sees it. */
export interface ToolCall {
  sessionId: string;
  parentId: string | null;
  agent: string;
  tool: string;
  callId: string;
  /** sha256 of tool + canonical JSON of the arguments. */
  fp: string;
  /** sha256 of the normalized key (shapeOf in tool-call.ts; a bash command's key from bash-key.ts). */
  nfp: string;
  /** Coarse, redacted target: a path, a command's first two tokens, a path plus pattern hash. */
  target: string;
  /** bash exit code; null when unknown or not bash. */
  exit: number | null;
  /** The tool errored, or bash exited non-zero. */
  failed: boolean;
  effect: Effect;
  /** For an edit or patch with a non-empty diff: fingerprints of the change and of its reverse. */
  change: { fwd: string; rev: string } | null;
  /** For write: the path key and content hash; prior is the content hash before, when the sensor knew it. */
  write: { path: string; content: string; prior: string | null | undefined; existed: boolean | null } | null;
  /**
   * A hash of what the tool answered (its output or error text), taken where
   * the call is read and never sent or stored: the same call with the same
   * answer is strong loop evidence, with a changing answer (polling) weak.
   */
  outcome: string | null;
  /**
   * The project state before and after a bash call, when the live sensor
   * probed it (plugin/tree-ledger.ts), and hashes of the paths the call
   * changed ("HEAD": it made a commit).
   */
  worktree: WorktreeAnswer | null;
  time: number;
}

/** What the live probe says a bash call changed in the project (nothing of the tree but hashes). */
export interface WorktreeAnswer {
  before: string;
  after: string;
  changed?: readonly string[];
}

/** A ToolCall after the tracker decided whether it landed. */
export interface ToolEvent extends ToolCall {
  landed: boolean;
  /**
   * A change that only repeated or undid one that already landed in this
   * session, or a return to an earlier work tree: landing.ts remembers both
   * across stretches (bounded), not only within the window.
   */
  reverted: boolean;
  /** Its target had not been seen before in this session (bounded memory). */
  novel: boolean;
}

/** An LLM request (one agent step). */
export interface TurnObservation {
  kind: "turn";
  sessionId: string;
  parentId: string | null;
  agent: string;
  time: number;
  model?: string;
}

/** The billed usage of one finished assistant message; messageId dedups repeats. */
export interface UsageObservation {
  kind: "usage";
  sessionId: string;
  messageId: string;
  time: number;
  costUsd: number;
  promptTokens: number;
  contextTokens: number;
}

/** A user turn; injected is true for continuation turns nobody typed. */
export interface UserObservation {
  kind: "user";
  sessionId: string;
  parentId: string | null;
  agent: string;
  time: number;
  injected: boolean;
  /** Hash of the typed text (see userTextHash); repeating it is a nudge, not steering. */
  textHash?: string | null;
}

export interface CompactionObservation {
  kind: "compaction";
  sessionId: string;
  time: number;
}

export interface ToolObservation {
  kind: "tool";
  call: ToolCall;
}

export type Observation =
  | ToolObservation
  | TurnObservation
  | UsageObservation
  | UserObservation
  | CompactionObservation;

/** The dominant reason a session was flagged; picks the incident report's "Avoid:" line. */
export type FlagReason =
  | "duplicates"
  | "repeat_target"
  | "in_a_row"
  | "cycle"
  | "retrace"
  | "fail_streak"
  | "whole_session"
  | "continuations"
  | "flip_flop"
  | "ceiling"
  | "read_only_repeat"
  | "read_only_failures"
  | "read_only_novelty";

export interface RepeatInfo {
  tool: string;
  target: string;
  count: number;
}

/** Everything the judge looks at, for one session at one moment. */
export interface Signals {
  calls: number;
  landed: number;
  turns: number;
  failures: number;
  callsSinceLanded: number;
  turnsSinceLanded: number;
  usdSinceLanded: number;
  promptTokensSinceLanded: number;
  usdTotal: number;
  windowSize: number;
  dupShare: number;
  ndupShare: number;
  /** Share of the window's calls that repeat an earlier one with the same result. */
  sameShare: number;
  /**
   * The repetition share the judge uses: a repeat with the same result counts
   * one, a repeat whose result changed (polling, a rerun after a revert) a quarter.
   */
  repeatShare: number;
  failStreak: number;
  failTarget: string | null;
  contextTokens: number;
  maxContextTokens: number;
  /** The window's most called target, whatever the arguments (the wire's top_target is topRepeat, not this). */
  busiestTarget: string | null;
  busiestTargetCount: number;
  /** The most repeated normalized call in the window: the wire's top_target (shared/wire.ts wireTopRepeat). */
  topRepeat: RepeatInfo | null;
  /** The most repeated normalized call with the same result each time, in the window. */
  topSame: RepeatInfo | null;
  /** The most repeated call with the same result since the last landed change (whole-session rule). */
  cumRepeat: RepeatInfo | null;
  /** Two to four calls going round with the same results, in the current stretch (shared/cycle.ts). */
  cycle: CycleInfo | null;
  /** The same call, or two calls in turn, repeated in a row with the same answers (shared/cycle.ts). */
  inARow: RowInfo | null;
  /** Four or more different calls done again in the same order with the same answers (shared/cycle.ts). */
  retrace: RetraceInfo | null;
  /** Most repeated calls over the whole session, for the report. */
  mostRepeated: RepeatInfo[];
  /** New targets per call in the window. */
  novelty: number;
  callsSinceNovel: number;
  injectedSinceLanded: number;
  injectedTotal: number;
  flipFlops: number;
  compactions: number;
  lastLandedAt: number | null;
  readOnly: boolean;
}

export interface Judgement {
  verdict: Verdict;
  reason: FlagReason | null;
}
