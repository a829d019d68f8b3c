// The router's state as the routes, services, background jobs, notifier
// delivery, watchdog and CLI see it, whatever the engine behind it. Every
// method answers a Promise except the gate's hot path (GateStore: decide,
// peek, recordRequest), which answers from the facts in memory and writes
// what it learnt off the request path, in batches.
import type { ProgressMessage, Verdict } from "../../shared/index.ts";
import type {
  EventView,
  RefusalScope,
  RefusalState,
  RefusalView,
  SessionsResponse,
  SessionView,
  WatchdogTickView,
} from "../api/schemas.ts";
import type { LabelsDoc, SessionDetail } from "../api/session-detail.ts";
import type { MarkResult } from "../db/mark-session.ts";
import type { ProgressOptions, ProgressResult } from "../db/store-progress.ts";
import type { KnobOverride } from "../db/tables/knobs.ts";
import type { MarkKind } from "../db/tables/marks.ts";
import type { PluginLinkRow } from "../db/tables/plugin-links.ts";
import type { ClientUsage } from "../db/tables/requests.ts";
import type { outageBefore, RouterEventView } from "../db/tables/router-runs.ts";
import type { WriteQueueStats } from "../db/write-queue.ts";
import type { GateFacts } from "../gate/facts.ts";
import type { GateStore } from "../gate/types.ts";

/** This run's row id and the outage before it. */
export interface RouterStart {
  seq: number;
  outage: ReturnType<typeof outageBefore>;
}

export interface MetricsSnapshot {
  sessionsByVerdict: Record<Verdict, number>;
  counters: Record<string, number>;
  livePlugins: number;
  stoppedTrees: number;
  stoppedSessions: number;
  lastTick: WatchdogTickView | null;
  marks: Record<MarkKind, number>;
}

export interface PruneResult {
  transitions: number;
  requests: number;
  sessions: number;
  ticks: number;
  samples: number;
  refusalLog: number;
  plugins: number;
  routerRuns: number;
}

/** The clock and live window a session view is drawn with. */
export interface ViewClock {
  now: number;
  /** A plugin heard from within this long is live. */
  liveWindowMs: number;
}

/** The gate's write queue as /health and /metrics read it. */
export interface WriteQueueView {
  readonly stats: WriteQueueStats;
  readonly failing: string | null;
  render(): string[];
}

export interface RouterStore extends GateStore {
  /** What the gate decides on, in memory; changes only after a transaction committed. */
  readonly facts: GateFacts;
  readonly writes: WriteQueueView;
  /** Writes the gate's waiting batch now (reads do this first, so they see it). */
  flush(): Promise<void>;
  /** Reads the gate's facts again from the database (after a prune, or a change made by another replica). */
  reloadFacts(): Promise<void>;

  /** Stores one POST /progress body atomically; a transition id seen before is a duplicate. */
  storeProgress(messages: readonly ProgressMessage[], opts: ProgressOptions): Promise<ProgressResult>;

  setRefusal(
    scope: RefusalScope,
    key: string,
    state: RefusalState,
    by: string,
    at: number,
    reason: string | null,
  ): Promise<RefusalView>;
  refusal(scope: RefusalScope, key: string): Promise<RefusalView | null>;
  refusals(): Promise<RefusalView[]>;
  refusalLog(limit?: number): Promise<RefusalView[]>;

  sessions(opts: ViewClock & { limit?: number }): Promise<SessionView[]>;
  sessionPage(opts: ViewClock & { limit: number; offset: number }): Promise<SessionsResponse>;
  flaggedSessions(opts: ViewClock & { limit: number }): Promise<SessionView[]>;
  sessionDetail(
    sessionId: string,
    opts: ViewClock & { thresholds: Record<string, number> },
  ): Promise<SessionDetail | null>;
  events(limit: number): Promise<EventView[]>;
  routerEvents(limit: number): Promise<RouterEventView[]>;
  lastWatchdogTick(): Promise<WatchdogTickView | null>;
  clientUsage(since: number): Promise<ClientUsage[]>;
  /** Plugin processes whose headers the gate saw since `since`, with their last heartbeat. */
  pluginLinks(since: number): Promise<PluginLinkRow[]>;
  /** Plugin instances heard from since `since`. */
  livePlugins(since: number): Promise<number>;
  metrics(opts: ViewClock): Promise<MetricsSnapshot>;
  /** Adds to a durable counter (figures that must survive restarts). */
  bump(name: string, by?: number): Promise<void>;
  /**
   * Claims an alert's incident key for this replica: true for the first claim
   * only (alert once across replicas). A won claim is counted in alerts_total
   * in the same commit.
   */
  claimAlert(key: string, now: number): Promise<boolean>;

  mark(sessionId: string, kind: MarkKind, by: string, at: number): Promise<MarkResult>;
  /** Removes a session's mark; its tree's root, or null when it had none. */
  unmark(sessionId: string): Promise<string | null>;
  labels(): Promise<LabelsDoc>;

  knobOverrides(): Promise<KnobOverride[]>;
  setKnobOverride(path: string, value: unknown, by: string, at: number): Promise<void>;
  deleteKnobOverride(path: string): Promise<boolean>;

  /** The router's own runs: a start (with the outage before it), alive marks, a clean stop; queued while writes fail. */
  routerStarted(at: number, pid: number, version: string, started: (run: RouterStart) => void): Promise<void>;
  routerAlive(seq: number, at: number): Promise<void>;
  routerStopped(seq: number, at: number): Promise<void>;

  /** Deletes history older than `retentionMs`; stopped trees and their sessions are kept until resumed. */
  prune(now: number, retentionMs: number): Promise<PruneResult>;

  /** Throws when the database cannot answer. */
  ping(): Promise<void>;
  /** Whether the database takes writes now (never waits on another process's lock). */
  writable(): Promise<boolean>;
  /** The migrations applied. */
  schemaVersion(): Promise<number>;
  close(): Promise<void>;
}
