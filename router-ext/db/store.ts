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
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "../gate/store.ts";
import { ModesStore } from "../modes/store.ts";
import { type IngestOptions, type IngestResult, ingestMessages } from "./ingest.ts";
import { type MarkResult, markSession } from "./mark-session.ts";
import { openTables, type Tables } from "./open-tables.ts";
import { readSessionDetail } from "./session-detail.ts";
import type { KnobOverride } from "./tables/knobs.ts";
import type { MarkKind } from "./tables/marks.ts";
import { type RefusalRow, refusalView } from "./tables/refusals.ts";
import { sessionView } from "./views.ts";
import { WriteQueue } from "./write-queue.ts";

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
  /** The gate's writes (identity, refusal counts, request records) wait here while another process holds the lock. */
  readonly writes: WriteQueue;
  private readonly now: () => number;

  constructor(db: Database.Database, opts: StoreOptions = {}) {
    this.db = db;
    this.tables = openTables(db);
    this.modes = new ModesStore(this.tables);
    this.now = opts.now ?? Date.now;
    this.writes = new WriteQueue(opts.log ? { log: opts.log } : {});
  }

  /** Stores one POST /progress body atomically. A transition id seen before is a duplicate, not re-applied. */
  ingest(messages: readonly ProgressMessage[], opts: IngestOptions): IngestResult {
    return this.db.transaction(() => ingestMessages(this.tables, this.modes, messages, opts))();
  }

  // ---- GateStore ----------------------------------------------------------

  /**
   * Learns the caller's identity (parent -> root) and answers whether its
   * session or tree is stopped. While another process holds the write lock the
   * answer is read without writing (peek) and the learning waits in the queue.
   */
  decide(identity: GateIdentity, now = this.now()): GateDecision {
    const sessionId = identity.sessionId;
    if (sessionId === null || sessionId.length === 0 || sessionId.length > 200) {
      return { refused: false, scope: null, reason: null, rootId: null };
    }
    let answer: GateDecision | null = null;
    this.writes.run("gate identity", () => {
      answer = this.db.transaction(() => this.judge(identity, sessionId, now, true))();
    });
    return answer ?? this.peek(identity);
  }

  /** The answer decide gives, learning and counting nothing (GET /gate/{id}, GET /v1/models). */
  peek(identity: GateIdentity): GateDecision {
    const sessionId = identity.sessionId;
    if (sessionId === null || sessionId.length === 0 || sessionId.length > 200) {
      return { refused: false, scope: null, reason: null, rootId: null };
    }
    return this.judge(identity, sessionId, this.now(), false);
  }

  private judge(identity: GateIdentity, sessionId: string, now: number, write: boolean): GateDecision {
    const t = this.tables;
    if (write) {
      t.sessions.learn(
        {
          session_id: sessionId,
          parent_id: identity.parent && identity.parent.length <= 200 ? identity.parent : null,
          root_id: null,
          agent: identity.agent ? identity.agent.slice(0, 64) : null,
          source: "gate",
        },
        now,
      );
      // Headers say a plugin is loaded, not that it reports (that is plugin_seen_at, from /progress).
      const version = identity.pluginVersion?.slice(0, 64);
      if (version) t.sessions.headersSeen(sessionId, version, now);
      if (version && identity.link)
        t.pluginLinks.seen(
          {
            instance_id: identity.link.instanceId,
            plugin_version: version,
            report_url: identity.link.reportTo,
            report_state: identity.link.state,
          },
          now,
        );
    }
    const known = t.sessions.get(sessionId) !== undefined;
    const parent = identity.parent && identity.parent !== sessionId ? identity.parent : null;
    const rootId = known || !parent ? t.sessions.rootOf(sessionId) : t.sessions.rootOf(parent);
    const sess = t.refusals.get("session", sessionId);
    // A recovery's own compaction request passes the scoped refusal it runs under.
    const compacting = identity.agent === "compaction" && this.modes.refusedByMode(sessionId);
    if (sess?.state === "stopped" && !compacting) {
      if (write) this.modes.countRefusal(sessionId, "session", sess.changed_at, now);
      return { refused: true, scope: "session", reason: refusalReason("session", sess), rootId };
    }
    const tree = t.refusals.get("tree", rootId);
    if (tree?.state === "stopped") {
      if (write) this.modes.countRefusal(sessionId, "tree", tree.changed_at, now);
      return { refused: true, scope: "tree", reason: refusalReason("tree", tree), rootId };
    }
    const overCap = this.modes.overCap(sessionId, rootId, identity.agent);
    return { refused: false, scope: null, reason: null, rootId, ...(overCap ? { overCap } : {}) };
  }

  /** Stores one gate request record (counts, money, timings; never a body). */
  recordRequest(r: RequestRecord): void {
    this.writes.run("request record", () =>
      this.db.transaction(() => {
        this.tables.requests.insert(r);
        if (r.refused) this.tables.counters.bump("refusals_total");
        if (r.session_id !== null) this.tables.sessions.touch(r.session_id, r.started_at);
      })(),
    );
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
    this.db.transaction(() => {
      this.tables.refusals.set({ scope, key, state, by, at, reason });
      if (state === "running") {
        this.tables.sessions.clearStopped(scope, key);
        // Admin Resume: the hard stop, the cap and the recovery count start over.
        if (scope === "tree") this.modes.resumeTree(key, at);
      }
    })();
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
    return this.tables.sessions.list(opts.limit ?? 2000).map((r) => sessionView(r, opts));
  }

  events(limit: number): EventView[] {
    return this.tables.transitions.events(limit);
  }

  lastWatchdogTick(): WatchdogTickView | null {
    return this.tables.ticks.last();
  }

  metrics(opts: { now: number; liveWindowMs: number }): MetricsSnapshot {
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
   * Whether the database takes a write transaction now (a read-only file, or a
   * write lock another process holds, does not). Never waits: /health must keep
   * answering while the lock is held. Writes nothing.
   */
  writable(): boolean {
    const wait = this.db.pragma("busy_timeout", { simple: true }) as number;
    this.db.pragma("busy_timeout = 0");
    try {
      this.db.prepare("BEGIN IMMEDIATE").run();
      this.db.prepare("ROLLBACK").run();
      return true;
    } catch {
      return false;
    } finally {
      this.db.pragma(`busy_timeout = ${wait}`);
    }
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
    return readSessionDetail(this.tables, sessionId, opts);
  }

  // ---- marks --------------------------------------------------------------

  /**
   * An admin labels any session, flagged or not (router-ext/db/mark-session.ts):
   * a false alarm on a flagged session also lifts every refusal in its tree.
   */
  mark(sessionId: string, kind: MarkKind, by: string, at: number): MarkResult {
    return this.db.transaction(() => markSession(this.tables, this.modes, { sessionId, kind, by, at }))();
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
    return this.db.transaction((): PruneResult => {
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
    })();
  }

  close(): void {
    this.writes.drain();
    this.writes.close();
    if (this.db.open) this.db.close();
  }
}

function refusalReason(scope: RefusalScope, r: RefusalRow): string {
  const what = scope === "tree" ? "its session tree" : "this session";
  const why = r.reason ? ` (${r.reason})` : "";
  return `${what} was stopped by ${r.changed_by} at ${new Date(r.changed_at).toISOString()}${why}`;
}
