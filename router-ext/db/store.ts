// The durable store on SQLite, a thin facade over one module per table
// (router-ext/db/tables/) sharing one handle. Every multi-row change is one
// transaction, so a kill -9 leaves either all of an acknowledged POST or none
// of it. It implements the gate's GateStore.
//
// It stores only what the wire schema carries: ids, verdicts, counts, money,
// coarse targets and the deterministic incident report. Never a request body,
// tool argument or file content.
import type Database from "better-sqlite3";
import type { ProgressMessage, Verdict } from "../../shared/index.ts";
import type {
  EventView,
  RefusalScope,
  RefusalState,
  RefusalView,
  SessionView,
  WatchdogTickView,
} from "../api/schemas.ts";
import { type LabelsDoc, labelOfMark, type SessionDetail } from "../api/session-detail.ts";
import { type GateFactChange, GateFacts } from "../gate/facts.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "../gate/store.ts";
import { decideGate, usableSessionId } from "../modes/gate-decision.ts";
import { ModesStore } from "../modes/store.ts";
import { observeGateFacts, readGateFacts } from "./gate-facts.ts";
import { GateWrites } from "./gate-writes.ts";
import { type IngestOptions, type IngestResult, ingestMessages } from "./ingest.ts";
import { type MarkResult, markSession } from "./mark-session.ts";
import { openTables, type Tables } from "./open-tables.ts";
import { readSessionDetail } from "./session-detail.ts";
import type { KnobOverride } from "./tables/knobs.ts";
import type { MarkKind } from "./tables/marks.ts";
import { refusalView } from "./tables/refusals.ts";
import { sessionView } from "./views.ts";
import { databaseWritable } from "./writable.ts";
import { isUnavailable, WriteQueue } from "./write-queue.ts";

export type { FreshTransition, IngestOptions, IngestResult, PlanFn } from "./ingest.ts";
export type { MarkResult } from "./mark-session.ts";
export type { KnobOverride } from "./tables/knobs.ts";
export type { EventView, RefusalScope, RefusalState, RefusalView, SessionView, WatchdogTickView };

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

export interface StoreOptions {
  /** The clock for gate decisions (refusal counting, identity times). Default Date.now. */
  now?: () => number;
  /** One line per queued write that failed for good. */
  log?: (line: string) => void;
}

/**
 * The SQLite store. One instance per open database; the server owns both.
 *
 * @example
 * const store = new Store(openDatabase(":memory:"));
 * store.ingest(messages, { now: Date.now(), plan: (ctx, t) => planTransition(ctx, t, knobs, now) });
 */
export class Store implements GateStore {
  readonly db: Database.Database;
  readonly tables: Tables;
  /** The modes' durable half: scoped refusals, directives, context caps (router-ext/modes/store.ts). */
  readonly modes: ModesStore;
  /**
   * The gate's writes (identity, refusal counts, request records): batched
   * off the request path, waiting while another process holds the lock or
   * the database refuses writes.
   */
  readonly writes: WriteQueue;
  /** What the gate decides on, in memory (loaded at start, kept current by every write). */
  readonly facts = new GateFacts();
  private readonly now: () => number;
  /** Fact changes of the transaction under way (tx), applied once it commits. */
  private changes: GateFactChange[] | null = null;
  private readonly gateWrites: GateWrites;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
    const raw = openTables(db);
    this.tables = observeGateFacts(raw, (c) => this.changed(c));
    this.modes = new ModesStore(this.tables);
    this.now = opts.now ?? Date.now;
    this.writes = new WriteQueue({
      transaction: (fn) => db.transaction(fn)(),
      ...(opts.log ? { log: opts.log } : {}),
    });
    // The gate's own writes go to the tables unobserved: the facts learnt them first.
    this.gateWrites = new GateWrites(raw, this.modes, this.writes);
    this.facts.reload(readGateFacts(db));
  }

  /** Stores one POST /progress body atomically. A transition id seen before is a duplicate, not re-applied. */
  ingest(messages: readonly ProgressMessage[], opts: IngestOptions): IngestResult {
    return this.tx(() => ingestMessages(this.tables, this.modes, messages, opts));
  }

  // ---- GateStore ----------------------------------------------------------

  /**
   * Learns the caller's identity (parent -> root) and answers whether its
   * session or tree is stopped, from the facts in memory (decideGate). What
   * it learnt and the refusal count are written after this turn of the event
   * loop, in one batch; while the database refuses writes the answer is
   * marked degraded (a known refusal stays refused, an unknown session passes).
   */
  decide(identity: GateIdentity, now = this.now()): GateDecision {
    const sessionId = identity.sessionId;
    this.facts.learn(identity);
    const d = decideGate(this.facts, identity);
    if (!usableSessionId(sessionId)) return d;
    this.gateWrites.learn(identity, sessionId, now);
    if (d.refused && d.scope !== null && d.refusedAt !== undefined)
      this.gateWrites.countRefusal(sessionId, d.scope, d.refusedAt, now);
    return this.writes.failing === null ? d : { ...d, degraded: true };
  }

  /** The answer decide gives, learning and counting nothing (GET /gate/{id}, GET /v1/models). */
  peek(identity: GateIdentity): GateDecision {
    const d = decideGate(this.facts, identity);
    return this.writes.failing === null ? d : { ...d, degraded: true };
  }

  /** Takes one gate request record (counts, money, timings; never a body); written in the next batch. */
  recordRequest(r: RequestRecord): void {
    this.facts.observe(r);
    this.gateWrites.record(r);
  }

  /** Writes the gate's waiting batch now (reads do this first, so they see it). */
  flush(): void {
    this.writes.flush();
  }

  /**
   * Runs `fn` in one transaction after the gate's waiting batch; the facts
   * take its changes only once it committed. A failure the database causes
   * (full, read-only) marks writes failing until one works again.
   */
  private tx<T>(fn: () => T): T {
    // The gate's writes first, so the database sees changes in the order the facts did.
    this.writes.flush();
    if (this.writes.blocked) this.writes.drain();
    if (this.changes !== null) return fn();
    this.changes = [];
    try {
      const out = this.db.transaction(fn)();
      for (const c of this.changes) this.facts.apply(c);
      this.writes.noteSuccess();
      return out;
    } catch (err) {
      if (isUnavailable(err)) this.writes.noteFailure(err);
      throw err;
    } finally {
      this.changes = null;
    }
  }

  private changed(c: GateFactChange): void {
    if (this.changes !== null) this.changes.push(c);
    else this.facts.apply(c);
  }

  // ---- refusals -----------------------------------------------------------

  /** Stops or resumes a tree (or one session); recorded with who and when, and kept in the log. */
  setRefusal(
    scope: RefusalScope,
    key: string,
    state: RefusalState,
    by: string,
    at: number,
    reason: string | null,
  ): RefusalView {
    this.tx(() => {
      this.tables.refusals.set({ scope, key, state, by, at, reason });
      if (state === "running") {
        this.tables.sessions.clearStopped(scope, key);
        // Admin Resume: the hard stop, the cap and the recovery count start over.
        if (scope === "tree") this.modes.resumeTree(key, at);
      }
    });
    return refusalView({ scope, key, state, reason, changed_by: by, changed_at: at });
  }

  refusal(scope: RefusalScope, key: string): RefusalView | null {
    const r = this.tables.refusals.get(scope, key);
    return r ? refusalView(r) : null;
  }

  refusals(): RefusalView[] {
    return this.tables.refusals.all().map(refusalView);
  }

  refusalLog(limit = 100): RefusalView[] {
    return this.tables.refusals.history(limit).map(refusalView);
  }

  // ---- reads --------------------------------------------------------------

  /** Sessions, most recently seen first. plugin_live: a plugin report within `liveWindowMs`. */
  sessions(opts: { now: number; liveWindowMs: number; limit?: number }): SessionView[] {
    this.flush();
    return this.tables.sessions.list(opts.limit ?? 2000).map((r) => sessionView(r, opts));
  }

  events(limit: number): EventView[] {
    return this.tables.transitions.events(limit);
  }

  lastWatchdogTick(): WatchdogTickView | null {
    return this.tables.ticks.last();
  }

  metrics(opts: { now: number; liveWindowMs: number }): MetricsSnapshot {
    this.flush();
    const t = this.tables;
    return {
      sessionsByVerdict: t.sessions.countByVerdict(),
      counters: t.counters.all(),
      livePlugins: t.plugins.liveSince(opts.now - opts.liveWindowMs),
      stoppedTrees: t.refusals.stoppedCount("tree"),
      stoppedSessions: t.refusals.stoppedCount("session"),
      lastTick: t.ticks.last(),
      marks: t.marks.countByKind(),
    };
  }

  /** Adds to a durable counter (for figures that must survive restarts, e.g. rejected bodies). */
  bump(name: string, by = 1): void {
    this.writes.run("counter", () => this.tables.counters.bump(name, by));
  }

  /** Throws when the database cannot answer. */
  ping(): void {
    this.db.prepare("SELECT 1").get();
  }

  /**
   * Whether the database takes writes now: not while its last write failed
   * (full, I/O error), nor when it is read-only or locked by another process
   * (db/writable.ts). Writes nothing of its own (the gate's waiting batch is
   * tried, as the most honest probe) and never waits on the lock.
   */
  writable(): boolean {
    this.flush();
    return this.writes.failing === null && databaseWritable(this.db);
  }

  /** Plugin instances heard from since `since`. */
  livePlugins(since: number): number {
    return this.tables.plugins.liveSince(since);
  }

  /** Everything the session page shows about one session, or null for an unknown one. */
  sessionDetail(
    sessionId: string,
    opts: { now: number; liveWindowMs: number; thresholds: Record<string, number> },
  ): SessionDetail | null {
    this.flush();
    return readSessionDetail(this.tables, sessionId, opts);
  }

  // ---- marks --------------------------------------------------------------

  /**
   * An admin labels any session, flagged or not (router-ext/db/mark-session.ts):
   * a false alarm on a flagged session also lifts every refusal in its tree.
   */
  mark(sessionId: string, kind: MarkKind, by: string, at: number): MarkResult {
    return this.tx(() => markSession(this.tables, this.modes, { sessionId, kind, by, at }));
  }

  /** Removes a session's mark; returns its tree's root, or null when it had none. */
  unmark(sessionId: string): string | null {
    const m = this.tables.marks.get(sessionId);
    if (!m) return null;
    this.tables.marks.delete(sessionId);
    return m.root_id;
  }

  /** Every mark as a calibrate labels document (false alarm: healthy, confirmed loop: loop). */
  labels(): LabelsDoc {
    const doc: LabelsDoc = {};
    for (const m of this.tables.marks.all())
      doc[m.session_id] = {
        label: labelOfMark(m.kind),
        mark: m.kind,
        by: m.marked_by,
        at: m.marked_at,
        verdict: m.verdict,
      };
    return doc;
  }

  // ---- knob overrides -----------------------------------------------------

  knobOverrides(): KnobOverride[] {
    return this.tables.knobs.all();
  }

  setKnobOverride(path: string, value: unknown, by: string, at: number): void {
    this.tables.knobs.set(path, value, by, at);
  }

  deleteKnobOverride(path: string): boolean {
    return this.tables.knobs.delete(path);
  }

  // ---- retention ----------------------------------------------------------

  /** Deletes history older than `retentionMs`. Stopped trees and their sessions are kept until resumed. */
  prune(now: number, retentionMs: number): PruneResult {
    const cutoff = now - retentionMs;
    const t = this.tables;
    const pruned = this.tx((): PruneResult => {
      // A resumed refusal older than the window is history only (the log keeps it until pruned too).
      const refusals = t.refusals.prune(cutoff);
      t.treeModes.prune(cutoff);
      this.modes.prune(cutoff);
      return {
        transitions: t.transitions.prune(cutoff),
        requests: t.requests.prune(cutoff),
        ticks: t.ticks.prune(cutoff),
        samples: t.samples.prune(cutoff),
        refusalLog: refusals.log,
        plugins: t.plugins.prune(cutoff) + t.pluginLinks.prune(cutoff),
        routerRuns: t.routerRuns.prune(cutoff),
        sessions: t.sessions.prune(cutoff),
      };
    });
    // Pruned sessions and requests leave the facts too: read them again.
    this.facts.reload(readGateFacts(this.db));
    this.gateWrites.forget();
    return pruned;
  }

  close(): void {
    this.writes.close();
    if (this.db.open) this.db.close();
  }
}
