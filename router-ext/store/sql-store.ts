// The router's store over any Sql engine: a thin facade over one repository
// per table (router-ext/db/tables/). Every multi-row change is one
// transaction, so a kill -9 leaves either all of an acknowledged POST or none
// of it. The gate's facts change only once a transaction committed.
//
// It stores only what the wire schema carries: ids, verdicts, counts, money,
// coarse targets and the deterministic incident report. Never a request body,
// tool argument or file content.
import type { ProgressMessage } from "../../shared/index.ts";
import type { RefusalScope, RefusalState, RefusalView } from "../api/schemas.ts";
import { type LabelsDoc, labelOfMark, type SessionDetail } from "../api/session-detail.ts";
import { observeGateFacts, readGateFacts } from "../db/gate-facts.ts";
import { GateWrites } from "../db/gate-writes.ts";
import { type MarkResult, markSession } from "../db/mark-session.ts";
import { openTables, type Tables } from "../db/open-tables.ts";
import { readSessionDetail } from "../db/session-detail.ts";
import { flaggedSessions, sessionPage } from "../db/session-list.ts";
import { type ProgressOptions, type ProgressResult, storeProgress } from "../db/store-progress.ts";
import type { KnobOverride } from "../db/tables/knobs.ts";
import type { MarkKind } from "../db/tables/marks.ts";
import { refusalView } from "../db/tables/refusals.ts";
import { isUnavailable } from "../db/unavailable.ts";
import { sessionView } from "../db/views.ts";
import { type WriteOffload, WriteQueue } from "../db/write-queue.ts";
import { type GateFactChange, GateFacts } from "../gate/facts.ts";
import type { GateDecision, GateIdentity, RequestRecord } from "../gate/types.ts";
import { decideGate, usableSessionId } from "../modes/gate-decision.ts";
import { ModesStore } from "../modes/store.ts";
import { claimAlert, pruneAlertClaims } from "./alert-claims.ts";
import type { MetricsSnapshot, PruneResult, RouterStart, RouterStore, ViewClock } from "./router-store.ts";
import type { Sql } from "./sql.ts";
import { type ReadOffload, ThreadReads } from "./thread-reads.ts";

export interface SqlStoreOptions {
  /** The clock for gate decisions (refusal counting, identity times). Default Date.now. */
  now?: () => number;
  /** One line per queued write that failed for good. */
  log?: (line: string) => void;
  /** Whether the database takes writes now, asked without writing (engine-specific). Default: ping works. */
  writable?: () => Promise<boolean>;
  /** Closes the engine's connection (after the write queue is drained). */
  close?: () => Promise<void> | void;
  /**
   * Called inside a transaction, before it commits, with the gate's fact
   * changes it made (the PostgreSQL engine tells the other replicas, delivered
   * on commit only).
   */
  beforeCommit?: (q: Sql, changes: readonly GateFactChange[]) => Promise<void>;
  /** Which replica this store serves (alert claims name it). Default "local". */
  replica?: string;
  /** Where the gate's batches are written (SQLite's writer thread); default here, on `sql`. */
  offload?: WriteOffload;
  /** Where the admin page's and the API's reads run (the writer thread, SQLite): off the event loop. Default: here. */
  reads?: ReadOffload;
}

/**
 * Old requests retention deletes per transaction: on SQLite the DELETE takes
 * about 10 ms, its commit up to about 35 ms more when it checkpoints the WAL
 * (bench/retention-prune.ts).
 */
const PRUNE_CHUNK = 5000;

/** The tables of one transaction, with the modes over them. */
interface Tx {
  t: Tables;
  modes: ModesStore;
}

/**
 * @example
 * const store = await SqlStore.open(new SqliteSql(openDatabase(":memory:")));
 * await store.storeProgress(messages, { now: Date.now(), plan: (ctx, t) => planTransition(ctx, t, knobs, now) });
 */
export class SqlStore implements RouterStore {
  /** Statements outside a transaction (reads, single writes). */
  private readonly tables: Tables;
  /** Read-only statements that may run off the event loop (the writer thread's connection on SQLite under serve), else `sql`. */
  readonly reads: Sql;
  /** The admin page's and the API's reads, through `reads`. */
  private readonly views: Tables;
  /**
   * The gate's writes (identity, refusal counts, request records): batched
   * off the request path, waiting while the database refuses writes.
   */
  readonly writes: WriteQueue;
  /** What the gate decides on, in memory (loaded at start, kept current by every write). */
  readonly facts = new GateFacts();
  private readonly now: () => number;
  private readonly gateWrites: GateWrites;
  /** Changes committed while a snapshot of the facts is being read (reloadFacts). */
  private readonly reloading = new Set<GateFactChange[]>();

  protected constructor(
    readonly sql: Sql,
    private readonly opts: SqlStoreOptions,
  ) {
    this.tables = openTables(sql);
    this.reads = opts.reads ? new ThreadReads(opts.reads, sql) : sql;
    this.views = opts.reads ? openTables(this.reads) : this.tables;
    this.now = opts.now ?? Date.now;
    this.writes = new WriteQueue(sql, {
      ...(opts.log ? { log: opts.log } : {}),
      ...(opts.offload ? { offload: opts.offload } : {}),
    });
    this.gateWrites = new GateWrites(this.writes);
  }

  /** A store over `sql` (migrated already), its facts read. */
  static async open(sql: Sql, opts: SqlStoreOptions = {}): Promise<SqlStore> {
    const store = new SqlStore(sql, opts);
    await store.reloadFacts();
    return store;
  }

  storeProgress(messages: readonly ProgressMessage[], opts: ProgressOptions): Promise<ProgressResult> {
    return this.tx(({ t, modes }) => storeProgress(t, modes, messages, opts));
  }

  // ---- GateStore: synchronous, from memory ---------------------------------

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

  flush(): Promise<void> {
    return this.writes.flush();
  }

  /**
   * Reads the facts again (a replica, after another one's change). A change
   * this store commits while the snapshot is read may be missing from it:
   * it is applied again on top, so a refusal just made here is never lost.
   */
  async reloadFacts(): Promise<void> {
    await this.flush();
    const during: GateFactChange[] = [];
    this.reloading.add(during);
    try {
      const snapshot = await readGateFacts(this.sql);
      this.facts.reload(snapshot);
      for (const c of during) this.facts.apply(c);
    } finally {
      this.reloading.delete(during);
    }
  }

  /**
   * Runs `fn` in one transaction after the gate's waiting batch; the facts
   * take its changes only once it committed. A failure the database causes
   * (full, read-only) marks writes failing until one works again.
   */
  private async tx<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    // The gate's writes first, so the database sees changes in the order the facts did.
    await this.writes.flush();
    if (this.writes.blocked) await this.writes.drain();
    const changes: GateFactChange[] = [];
    try {
      const out = await this.sql.tx(async (q) => {
        const t = observeGateFacts(openTables(q), (c) => changes.push(c));
        const result = await fn({ t, modes: new ModesStore(t) });
        if (changes.length > 0) await this.opts.beforeCommit?.(q, changes);
        return result;
      });
      for (const c of changes) this.facts.apply(c);
      for (const during of this.reloading) during.push(...changes);
      this.writes.noteSuccess();
      return out;
    } catch (err) {
      if (isUnavailable(err)) this.writes.noteFailure(err);
      throw err;
    }
  }

  // ---- refusals -----------------------------------------------------------

  /** Stops or resumes a tree (or one session); recorded with who and when, and kept in the log. */
  async setRefusal(
    scope: RefusalScope,
    key: string,
    state: RefusalState,
    by: string,
    at: number,
    reason: string | null,
  ): Promise<RefusalView> {
    await this.tx(async ({ t, modes }) => {
      await t.refusals.set({ scope, key, state, by, at, reason });
      if (state === "running") {
        await t.sessions.clearStopped(scope, key);
        // Admin Resume: the hard stop, the cap and the recovery count start over.
        if (scope === "tree") await modes.resumeTree(key, at);
      }
    });
    return refusalView({ scope, key, state, reason, changed_by: by, changed_at: at });
  }

  async refusal(scope: RefusalScope, key: string): Promise<RefusalView | null> {
    const r = await this.tables.refusals.get(scope, key);
    return r ? refusalView(r) : null;
  }

  async refusals(): Promise<RefusalView[]> {
    return (await this.tables.refusals.all()).map(refusalView);
  }

  async refusalLog(limit = 100): Promise<RefusalView[]> {
    return (await this.tables.refusals.history(limit)).map(refusalView);
  }

  // ---- reads --------------------------------------------------------------
  // The admin page's and the API's (through `views`: on the writer thread
  // under serve). /metrics, /health and the gate's facts stay here: a few
  // counts, and what the main connection must answer for itself.

  /** Sessions, most recently seen first. plugin_live: a plugin report within `liveWindowMs`. */
  async sessions(opts: ViewClock & { limit?: number }) {
    await this.flush();
    return (await this.views.sessions.list(opts.limit ?? 2000)).map((r) => sessionView(r, opts));
  }

  async sessionPage(opts: ViewClock & { limit: number; offset: number }) {
    await this.flush();
    return sessionPage(this.views, opts);
  }

  async flaggedSessions(opts: ViewClock & { limit: number }) {
    await this.flush();
    return flaggedSessions(this.views, opts);
  }

  /** Everything the session page shows about one session, or null for an unknown one. */
  async sessionDetail(
    sessionId: string,
    opts: ViewClock & { thresholds: Record<string, number> },
  ): Promise<SessionDetail | null> {
    await this.flush();
    return readSessionDetail(this.views, sessionId, opts);
  }

  events(limit: number) {
    return this.views.transitions.events(limit);
  }

  routerEvents(limit: number) {
    return this.views.routerRuns.events(limit);
  }

  lastWatchdogTick() {
    return this.tables.ticks.last();
  }

  async clientUsage(since: number) {
    await this.flush();
    return this.views.requests.byClient(since);
  }

  async pluginLinks(since: number) {
    await this.flush();
    return this.views.pluginLinks.since(since);
  }

  livePlugins(since: number): Promise<number> {
    return this.tables.plugins.liveSince(since);
  }

  async metrics(opts: ViewClock): Promise<MetricsSnapshot> {
    await this.flush();
    const t = this.tables;
    return {
      sessionsByVerdict: await t.sessions.countByVerdict(),
      counters: await t.counters.all(),
      livePlugins: await t.plugins.liveSince(opts.now - opts.liveWindowMs),
      stoppedTrees: await t.refusals.stoppedCount("tree"),
      stoppedSessions: await t.refusals.stoppedCount("session"),
      lastTick: await t.ticks.last(),
      marks: await t.marks.countByKind(),
    };
  }

  async bump(name: string, by = 1): Promise<void> {
    await this.writes.run("counter", (q) => openTables(q).counters.bump(name, by));
  }

  claimAlert(key: string, now: number): Promise<boolean> {
    // Claim and count in one commit: a commit is most of a write's cost, and
    // every flagged transition raises an alert (bench/progress-throughput.ts).
    return this.sql.tx(async (q) => {
      const won = await claimAlert(q, key, this.opts.replica ?? "local", now);
      if (won) await openTables(q).counters.bump("alerts_total");
      return won;
    });
  }

  // ---- marks --------------------------------------------------------------

  /**
   * An admin labels any session, flagged or not (router-ext/db/mark-session.ts):
   * a false alarm on a flagged session also lifts every refusal in its tree.
   */
  mark(sessionId: string, kind: MarkKind, by: string, at: number): Promise<MarkResult> {
    return this.tx(({ t, modes }) => markSession(t, modes, { sessionId, kind, by, at }));
  }

  async unmark(sessionId: string): Promise<string | null> {
    const m = await this.tables.marks.get(sessionId);
    if (!m) return null;
    await this.tables.marks.delete(sessionId);
    return m.root_id;
  }

  /** Every mark as a calibrate labels document (false alarm: healthy, confirmed loop: loop). */
  async labels(): Promise<LabelsDoc> {
    const doc: LabelsDoc = {};
    for (const m of await this.tables.marks.all())
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

  knobOverrides(): Promise<KnobOverride[]> {
    return this.tables.knobs.all();
  }

  setKnobOverride(path: string, value: unknown, by: string, at: number): Promise<void> {
    return this.tables.knobs.set(path, value, by, at);
  }

  deleteKnobOverride(path: string): Promise<boolean> {
    return this.tables.knobs.delete(path);
  }

  // ---- the router's own runs ------------------------------------------------

  async routerStarted(at: number, pid: number, version: string, started: (run: RouterStart) => void) {
    await this.writes.run("router run", async (q) => {
      started(await q.tx((tq) => openTables(tq).routerRuns.start(at, pid, version)));
    });
  }

  async routerAlive(seq: number, at: number): Promise<void> {
    await this.writes.run("router alive", (q) => openTables(q).routerRuns.alive(seq, at));
  }

  async routerStopped(seq: number, at: number): Promise<void> {
    await this.writes.run("router stop", (q) => openTables(q).routerRuns.stopped(seq, at));
  }

  // ---- retention ----------------------------------------------------------

  /** Deletes history older than `retentionMs`. Stopped trees and their sessions are kept until resumed. */
  async prune(now: number, retentionMs: number): Promise<PruneResult> {
    const cutoff = now - retentionMs;
    const chunked = await this.pruneRequests(cutoff);
    const pruned = await this.tx(async ({ t, modes }): Promise<PruneResult> => {
      // A resumed refusal older than the window is history only (the log keeps it until pruned too).
      const refusals = await t.refusals.prune(cutoff);
      await t.treeModes.prune(cutoff);
      await modes.prune(cutoff);
      return {
        transitions: await t.transitions.prune(cutoff),
        requests: await t.requests.prune(cutoff),
        ticks: await t.ticks.prune(cutoff),
        samples: await t.samples.prune(cutoff),
        refusalLog: refusals.log,
        plugins: (await t.plugins.prune(cutoff)) + (await t.pluginLinks.prune(cutoff)),
        routerRuns: await t.routerRuns.prune(cutoff),
        sessions: await t.sessions.prune(cutoff),
      };
    });
    await pruneAlertClaims(this.sql, cutoff);
    // Pruned sessions and requests leave the facts too: read them again.
    await this.reloadFacts();
    this.gateWrites.forget();
    return { ...pruned, requests: chunked + pruned.requests };
  }

  /**
   * The request history (one row a model request: 100,000 old ones took
   * about 190 ms to delete in one statement, the gate waiting) goes in
   * chunks, each its own transaction, the event loop getting a turn between.
   * Requests are history only: no other row depends on them, and the
   * transaction after deletes any that came since.
   */
  private async pruneRequests(cutoff: number): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.tx(({ t }) => t.requests.pruneSome(cutoff, PRUNE_CHUNK));
      total += n;
      if (n < PRUNE_CHUNK) return total;
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  // ---- health -------------------------------------------------------------

  async ping(): Promise<void> {
    await this.sql.get("SELECT 1 AS one");
  }

  /**
   * Whether the database takes writes now: not while its last write failed
   * (full, I/O error), nor when the engine says it cannot (read-only, locked
   * elsewhere). The gate's waiting batch is tried first, as the most honest probe.
   */
  async writable(): Promise<boolean> {
    await this.flush();
    if (this.writes.failing !== null) return false;
    return this.opts.writable ? this.opts.writable() : this.ping().then(() => true);
  }

  async schemaVersion(): Promise<number> {
    return (
      (await this.sql.get<{ v: number | null }>("SELECT MAX(version) AS v FROM schema_migrations"))?.v ?? 0
    );
  }

  async close(): Promise<void> {
    await this.writes.close();
    await this.opts.close?.();
  }
}
