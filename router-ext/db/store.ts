// The durable policy store on SQLite: sessions and their verdict history,
// tree and session refusals (with who and when), the gate's request records,
// admin knob overrides, plugin heartbeats and watchdog ticks. Every statement
// is prepared once; every multi-row change is one transaction, so a kill -9
// leaves either all of an acknowledged POST or none of it.
//
// It implements the gate's GateStore. It stores only what the wire schema
// carries: ids, verdicts, counts, money, coarse targets and the deterministic
// incident report. Never a request body, tool argument or file content.
import type Database from "better-sqlite3";
import type { Heartbeat, ProgressMessage, Transition, Verdict, WatchdogTick } from "../../shared/index.ts";
import { VERDICT_RANK } from "../../shared/index.ts";
import type { GateDecision, GateIdentity, GateStore, RequestRecord } from "../gate/store.ts";
import { type ModeEffects, ModesStore } from "../modes/store.ts";

export type SessionSource = "plugin" | "watchdog" | "gate";
export type RefusalScope = "tree" | "session";
export type RefusalState = "stopped" | "running";

/** One row of GET /api/sessions. Times are epoch milliseconds. */
export interface SessionView {
  session_id: string;
  parent_id: string | null;
  root_id: string;
  agent: string | null;
  verdict: Verdict;
  worst: Verdict;
  flags: number;
  stage: string;
  plugin_live: boolean;
  plugin_version: string | null;
  turns_since_landed: number;
  usd_since_landed: number;
  context_tokens: number;
  top_target: string | null;
  top_target_count: number;
  source: SessionSource;
  last_seen_at: number;
  last_landed_at: number | null;
  reason: string | null;
  report: string | null;
  /** Whether the gate refuses it now: its tree or the session itself is stopped. */
  refused: boolean;
  stopped_by: string | null;
  stopped_at: number | null;
  /** Where turns and $ since landed come from: the gate's request records, or the reporter's numbers. */
  spend_source: "gate" | "reporter";
  /** Why the configured mode could not act on this session's last detection, or null. */
  cannot_act: string | null;
}

export interface EventView {
  session_id: string;
  root_id: string;
  verdict: Verdict;
  previous: Verdict;
  reason: string | null;
  source: "plugin" | "watchdog";
  at: number;
}

export interface RefusalView {
  scope: RefusalScope;
  key: string;
  state: RefusalState;
  reason: string | null;
  by: string;
  at: number;
}

export interface WatchdogTickView {
  at: number;
  received_at: number;
  servers: number;
  sessions: number;
  flagged: number;
  blind: boolean;
}

export interface KnobOverride {
  path: string;
  value: unknown;
  set_by: string;
  set_at: number;
}

/**
 * Decides the mode stage after a transition (pure; the server passes
 * server/stage.ts). The tree's mode state travels as JSON so the store stays
 * ignorant of the policy; it is saved in the same transaction as the transition.
 */
export type StageFn = (
  t: Transition,
  ctx: { treeState: string | null; pluginSeenAt: number | null; currentStage: string },
) => {
  stage: string;
  actions: readonly unknown[];
  treeState: string;
  effects?: ModeEffects;
  /** Why the mode could not act (no live plugin); null or absent when it could. */
  cannotAct?: string | null;
};

export interface FreshTransition {
  transition: Transition;
  stage: string;
  actions: readonly unknown[];
}

export interface IngestOptions {
  now: number;
  stage: StageFn;
}

export interface IngestResult {
  accepted: number;
  duplicates: number;
  /** Transitions stored for the first time, with the stage they put their session in. */
  fresh: FreshTransition[];
}

export interface MetricsSnapshot {
  sessionsByVerdict: Record<Verdict, number>;
  counters: Record<string, number>;
  livePlugins: number;
  stoppedTrees: number;
  stoppedSessions: number;
  lastTick: WatchdogTickView | null;
}

export interface PruneResult {
  transitions: number;
  requests: number;
  sessions: number;
  ticks: number;
  refusalLog: number;
  plugins: number;
}

interface SessionDbRow {
  session_id: string;
  parent_id: string | null;
  root_id: string;
  agent: string | null;
  verdict: Verdict;
  worst: Verdict;
  flags: number;
  stage: string;
  cannot_act: string | null;
  reason: string | null;
  report: string | null;
  verdict_at: number | null;
  turns_since_landed: number;
  usd_since_landed: number;
  last_landed_at: number | null;
  context_tokens: number;
  stats_at: number | null;
  top_target: string | null;
  top_target_count: number;
  source: SessionSource;
  plugin_version: string | null;
  plugin_seen_at: number | null;
  first_seen_at: number;
  last_seen_at: number;
}

interface SessionQueryRow extends SessionDbRow {
  tree_state: RefusalState | null;
  tree_by: string | null;
  tree_at: number | null;
  sess_state: RefusalState | null;
  sess_by: string | null;
  sess_at: number | null;
  g_requests: number;
  g_turns: number;
  g_usd: number;
  g_ctx: number | null;
}

const worse = (a: Verdict, b: Verdict): Verdict => (VERDICT_RANK[b] > VERDICT_RANK[a] ? b : a);

function prepareAll(db: Database.Database) {
  return {
    getSession: db.prepare<[string], SessionDbRow>("SELECT * FROM sessions WHERE session_id = ?"),
    insertSession: db.prepare(
      `INSERT INTO sessions (session_id, parent_id, root_id, agent, verdict, worst, source, first_seen_at, last_seen_at)
       VALUES (@session_id, @parent_id, @root_id, @agent, @verdict, @verdict, @source, @now, @now)`,
    ),
    updateIdentity: db.prepare(
      `UPDATE sessions SET parent_id = COALESCE(@parent_id, parent_id), root_id = @root_id,
         agent = COALESCE(@agent, agent), last_seen_at = MAX(last_seen_at, @now) WHERE session_id = @session_id`,
    ),
    reroot: db.prepare("UPDATE sessions SET root_id = ? WHERE root_id = ? AND session_id <> ?"),
    setPlugin: db.prepare(
      `UPDATE sessions SET plugin_version = ?, plugin_seen_at = MAX(COALESCE(plugin_seen_at, 0), ?),
         source = CASE WHEN source = 'gate' THEN 'plugin' ELSE source END
       WHERE session_id = ?`,
    ),
    applyVerdict: db.prepare(
      `UPDATE sessions SET verdict = @verdict, reason = @reason, report = @report, verdict_at = @at,
         top_target = @top_target, top_target_count = @top_target_count, source = @source, stage = @stage
       WHERE session_id = @session_id`,
    ),
    setCannotAct: db.prepare("UPDATE sessions SET cannot_act = ? WHERE session_id = ?"),
    bumpFlags: db.prepare(
      "UPDATE sessions SET worst = @worst, flags = flags + @flag, last_seen_at = MAX(last_seen_at, @now) WHERE session_id = @session_id",
    ),
    applyStats: db.prepare(
      `UPDATE sessions SET turns_since_landed = @turns, usd_since_landed = COALESCE(@usd, usd_since_landed),
         last_landed_at = @last_landed_at, context_tokens = @context_tokens, stats_at = @at
       WHERE session_id = @session_id AND COALESCE(stats_at, -1) <= @at`,
    ),
    insertTransition: db.prepare(
      `INSERT INTO transitions (id, session_id, root_id, source, verdict, previous, reason, at, received_at,
         signals, top_target, top_target_count, plugin_version, second_opinion)
       VALUES (@id, @session_id, @root_id, @source, @verdict, @previous, @reason, @at, @received_at,
         @signals, @top_target, @top_target_count, @plugin_version, @second_opinion)
       ON CONFLICT(id) DO NOTHING`,
    ),
    getTreeMode: db.prepare<[string], { state: string }>("SELECT state FROM tree_modes WHERE root_id = ?"),
    setTreeMode: db.prepare(
      `INSERT INTO tree_modes (root_id, state, updated_at) VALUES (?, ?, ?)
       ON CONFLICT(root_id) DO UPDATE SET state = excluded.state, updated_at = excluded.updated_at`,
    ),
    deleteTreeMode: db.prepare("DELETE FROM tree_modes WHERE root_id = ?"),
    pruneTreeModes: db.prepare(
      "DELETE FROM tree_modes WHERE updated_at < ? AND root_id NOT IN (SELECT key FROM refusals WHERE scope = 'tree' AND state = 'stopped')",
    ),
    upsertInstance: db.prepare(
      `INSERT INTO plugin_instances (instance_id, plugin_version, sessions, first_seen_at, last_seen_at)
       VALUES (@instance_id, @plugin_version, @sessions, @now, @now)
       ON CONFLICT(instance_id) DO UPDATE SET plugin_version = excluded.plugin_version,
         sessions = excluded.sessions, last_seen_at = excluded.last_seen_at`,
    ),
    insertTick: db.prepare(
      `INSERT INTO watchdog_ticks (at, received_at, servers, sessions, flagged, blind)
       VALUES (@at, @received_at, @servers, @sessions, @flagged, @blind)`,
    ),
    lastTick: db.prepare<[], Omit<WatchdogTickView, "blind"> & { blind: number }>(
      "SELECT at, received_at, servers, sessions, flagged, blind FROM watchdog_ticks ORDER BY seq DESC LIMIT 1",
    ),
    bumpCounter: db.prepare(
      "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
    ),
    counters: db.prepare<[], { name: string; value: number }>("SELECT name, value FROM counters"),
    getRefusal: db.prepare<[RefusalScope, string], RefusalDbRow>(
      "SELECT scope, key, state, reason, changed_by, changed_at FROM refusals WHERE scope = ? AND key = ?",
    ),
    upsertRefusal: db.prepare(
      `INSERT INTO refusals (scope, key, state, reason, changed_by, changed_at) VALUES (@scope, @key, @state, @reason, @by, @at)
       ON CONFLICT(scope, key) DO UPDATE SET state = excluded.state, reason = excluded.reason,
         changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
    ),
    logRefusal: db.prepare(
      `INSERT INTO refusal_log (scope, key, state, reason, changed_by, changed_at) VALUES (@scope, @key, @state, @reason, @by, @at)`,
    ),
    refusals: db.prepare<[], RefusalDbRow>(
      "SELECT scope, key, state, reason, changed_by, changed_at FROM refusals ORDER BY changed_at DESC",
    ),
    refusalLog: db.prepare<[number], RefusalDbRow>(
      "SELECT scope, key, state, reason, changed_by, changed_at FROM refusal_log ORDER BY seq DESC LIMIT ?",
    ),
    insertRequest: db.prepare(
      `INSERT INTO requests (conversation, root_id, agent, parent, model, status, prompt_tokens, completion_tokens,
         cached_tokens, cost_usd, context_tokens, started_at, duration_ms, refused, plugin_version)
       VALUES (@conversation, @root_id, @agent, @parent, @model, @status, @prompt_tokens, @completion_tokens,
         @cached_tokens, @cost_usd, @context_tokens, @started_at, @duration_ms, @refused, @plugin_version)`,
    ),
    touchSession: db.prepare("UPDATE sessions SET last_seen_at = MAX(last_seen_at, ?) WHERE session_id = ?"),
    sessions: db.prepare<[number], SessionQueryRow>(
      `SELECT s.*,
         rt.state AS tree_state, rt.changed_by AS tree_by, rt.changed_at AS tree_at,
         rs.state AS sess_state, rs.changed_by AS sess_by, rs.changed_at AS sess_at,
         (SELECT COUNT(*) FROM requests q WHERE q.conversation = s.session_id) AS g_requests,
         (SELECT COUNT(*) FROM requests q
            WHERE q.conversation IN (SELECT s.session_id UNION ALL SELECT c.session_id FROM sessions c WHERE c.parent_id = s.session_id)
              AND q.refused = 0 AND q.started_at > COALESCE(s.last_landed_at, -1)) AS g_turns,
         (SELECT TOTAL(q.cost_usd) FROM requests q
            WHERE q.conversation IN (SELECT s.session_id UNION ALL SELECT c.session_id FROM sessions c WHERE c.parent_id = s.session_id)
              AND q.refused = 0 AND q.started_at > COALESCE(s.last_landed_at, -1)) AS g_usd,
         (SELECT q.context_tokens FROM requests q WHERE q.conversation = s.session_id AND q.context_tokens IS NOT NULL AND q.refused = 0
            ORDER BY q.started_at DESC LIMIT 1) AS g_ctx
       FROM sessions s
       LEFT JOIN refusals rt ON rt.scope = 'tree' AND rt.key = s.root_id
       LEFT JOIN refusals rs ON rs.scope = 'session' AND rs.key = s.session_id
       ORDER BY s.last_seen_at DESC LIMIT ?`,
    ),
    events: db.prepare<[number], EventView>(
      `SELECT session_id, root_id, verdict, previous, reason, source, at FROM transitions
       ORDER BY at DESC, received_at DESC LIMIT ?`,
    ),
    byVerdict: db.prepare<[], { verdict: Verdict; n: number }>(
      "SELECT verdict, COUNT(*) AS n FROM sessions GROUP BY verdict",
    ),
    livePlugins: db.prepare<[number], { n: number }>(
      "SELECT COUNT(*) AS n FROM plugin_instances WHERE last_seen_at >= ?",
    ),
    stoppedCount: db.prepare<[RefusalScope], { n: number }>(
      "SELECT COUNT(*) AS n FROM refusals WHERE scope = ? AND state = 'stopped'",
    ),
    knobs: db.prepare<[], { path: string; value: string; set_by: string; set_at: number }>(
      "SELECT path, value, set_by, set_at FROM knob_overrides ORDER BY path",
    ),
    setKnob: db.prepare(
      `INSERT INTO knob_overrides (path, value, set_by, set_at) VALUES (?, ?, ?, ?)
       ON CONFLICT(path) DO UPDATE SET value = excluded.value, set_by = excluded.set_by, set_at = excluded.set_at`,
    ),
    deleteKnob: db.prepare("DELETE FROM knob_overrides WHERE path = ?"),
    pruneTransitions: db.prepare("DELETE FROM transitions WHERE received_at < ?"),
    pruneRequests: db.prepare("DELETE FROM requests WHERE started_at < ?"),
    pruneTicks: db.prepare(
      "DELETE FROM watchdog_ticks WHERE received_at < ? AND seq < (SELECT MAX(seq) FROM watchdog_ticks)",
    ),
    pruneRefusalLog: db.prepare("DELETE FROM refusal_log WHERE changed_at < ?"),
    prunePlugins: db.prepare("DELETE FROM plugin_instances WHERE last_seen_at < ?"),
    pruneSessions: db.prepare(
      `DELETE FROM sessions WHERE last_seen_at < @cutoff
         AND root_id NOT IN (SELECT key FROM refusals WHERE scope = 'tree' AND state = 'stopped')
         AND session_id NOT IN (SELECT key FROM refusals WHERE scope = 'session' AND state = 'stopped')`,
    ),
    pruneRunningRefusals: db.prepare("DELETE FROM refusals WHERE state = 'running' AND changed_at < ?"),
    clearTreeStage: db.prepare("UPDATE sessions SET stage = 'none' WHERE root_id = ? AND stage = 'stopped'"),
    clearSessionStage: db.prepare(
      "UPDATE sessions SET stage = 'none' WHERE session_id = ? AND stage = 'stopped'",
    ),
    ping: db.prepare<[], { ok: number }>("SELECT 1 AS ok"),
  };
}

interface RefusalDbRow {
  scope: RefusalScope;
  key: string;
  state: RefusalState;
  reason: string | null;
  changed_by: string;
  changed_at: number;
}

const refusalView = (r: RefusalDbRow): RefusalView => ({
  scope: r.scope,
  key: r.key,
  state: r.state,
  reason: r.reason,
  by: r.changed_by,
  at: r.changed_at,
});

/**
 * The SQLite store. One instance per open database; the server owns both.
 *
 * @example
 * const store = new Store(openDatabase(":memory:"));
 * store.ingest(messages, { now: Date.now(), recoverWindowMs: 3_600_000, stage: () => "none" });
 */
export class Store implements GateStore {
  readonly db: Database.Database;
  private readonly q: ReturnType<typeof prepareAll>;
  /** The modes' durable half: scoped refusals, directives, context caps (router-ext/modes/store.ts). */
  readonly modes: ModesStore;

  constructor(db: Database.Database) {
    this.db = db;
    this.q = prepareAll(db);
    this.modes = new ModesStore(db);
  }

  /** Stores one POST /progress body atomically. A transition id seen before is a duplicate, not re-applied. */
  ingest(messages: readonly ProgressMessage[], opts: IngestOptions): IngestResult {
    return this.db.transaction((): IngestResult => {
      const out: IngestResult = { accepted: 0, duplicates: 0, fresh: [] };
      for (const m of messages) {
        if (m.type === "transition") {
          const fresh = this.applyTransition(m, opts);
          if (fresh) {
            out.accepted++;
            out.fresh.push(fresh);
          } else out.duplicates++;
        } else if (m.type === "heartbeat") {
          this.applyHeartbeat(m, opts.now);
          out.accepted++;
        } else if (m.type === "directive_result") {
          this.modes.applyResult(m, opts.now);
          out.accepted++;
        } else {
          this.applyTick(m, opts.now);
          out.accepted++;
        }
      }
      if (out.accepted > 0) this.q.bumpCounter.run("progress_messages_total", out.accepted);
      if (out.duplicates > 0) this.q.bumpCounter.run("progress_duplicates_total", out.duplicates);
      return out;
    })();
  }

  private applyTransition(t: Transition, opts: IngestOptions): FreshTransition | null {
    const inserted = this.q.insertTransition.run({
      id: t.id,
      session_id: t.session_id,
      root_id: t.root_id,
      source: t.source,
      verdict: t.verdict,
      previous: t.previous,
      reason: t.reason,
      at: t.at,
      received_at: opts.now,
      signals: JSON.stringify(t.signals),
      top_target: t.top_target,
      top_target_count: t.top_target_count,
      plugin_version: t.plugin_version,
      second_opinion: t.second_opinion ? JSON.stringify(t.second_opinion) : null,
    });
    if (inserted.changes === 0) return null;

    const before = this.learnIdentity(
      {
        session_id: t.session_id,
        parent_id: t.parent_id,
        root_id: t.root_id,
        agent: t.agent,
        source: t.source,
        verdict: t.verdict,
      },
      opts.now,
    );
    if (t.source === "plugin" && t.plugin_version !== null) {
      this.q.setPlugin.run(t.plugin_version, opts.now, t.session_id);
    }
    const row = this.q.getSession.get(t.session_id) as SessionDbRow;
    const flagged = t.previous === "ok" && t.verdict !== "ok";
    if (flagged) this.q.bumpCounter.run(`warnings_total:${t.verdict}`, 1);
    this.q.bumpCounter.run(`transitions_total:${t.source}`, 1);
    this.q.bumpFlags.run({
      session_id: t.session_id,
      worst: worse(before?.worst ?? "ok", t.verdict),
      flag: flagged ? 1 : 0,
      now: opts.now,
    });
    const { stage, actions, treeState, effects, cannotAct } = opts.stage(t, {
      treeState: this.q.getTreeMode.get(row.root_id)?.state ?? null,
      pluginSeenAt: row.plugin_seen_at,
      currentStage: row.stage,
    });
    this.q.setTreeMode.run(row.root_id, treeState, opts.now);
    if (effects) this.modes.applyEffects(effects, opts.now);
    if (t.verdict === "ok") this.modes.liftSession(t.session_id, "session ok", opts.now);
    // An older transition arriving late (a retry queue flush) joins the history
    // and the counts but does not overwrite a newer verdict.
    if (row.verdict_at === null || t.at >= row.verdict_at) {
      this.q.applyVerdict.run({
        session_id: t.session_id,
        verdict: t.verdict,
        reason: t.reason,
        report: t.report.length > 0 ? t.report : null,
        at: t.at,
        top_target: t.top_target,
        top_target_count: t.top_target_count,
        source: t.source,
        stage,
      });
      this.q.setCannotAct.run(cannotAct ?? null, t.session_id);
    }
    this.q.applyStats.run({
      session_id: t.session_id,
      turns: t.signals.turns_since_landed,
      usd: t.signals.usd_since_landed,
      last_landed_at: t.signals.last_landed_at,
      context_tokens: t.signals.context_tokens,
      at: t.at,
    });
    return { transition: t, stage, actions };
  }

  private applyHeartbeat(h: Heartbeat, now: number): void {
    this.q.upsertInstance.run({
      instance_id: h.instance_id,
      plugin_version: h.plugin_version,
      sessions: h.sessions.length,
      now,
    });
    for (const s of h.sessions) {
      this.learnIdentity(
        {
          session_id: s.session_id,
          parent_id: s.parent_id,
          root_id: s.root_id,
          agent: s.agent,
          source: "plugin",
          verdict: s.verdict,
        },
        now,
      );
      this.q.setPlugin.run(h.plugin_version, now, s.session_id);
      if (s.verdict === "ok") this.modes.liftSession(s.session_id, "session ok", now);
      this.q.applyStats.run({
        session_id: s.session_id,
        turns: s.turns_since_landed,
        usd: null,
        last_landed_at: s.last_landed_at,
        context_tokens: s.context_tokens,
        at: h.at,
      });
    }
  }

  private applyTick(t: WatchdogTick, now: number): void {
    this.q.insertTick.run({
      at: t.at,
      received_at: now,
      servers: t.servers,
      sessions: t.sessions,
      flagged: t.flagged,
      blind: t.blind ? 1 : 0,
    });
  }

  /**
   * Inserts or updates a session's identity. When a session that was its own
   * root learns a parent, every session filed under it moves to the new root,
   * so a tree learnt bottom-up still ends up under one root.
   */
  private learnIdentity(
    id: {
      session_id: string;
      parent_id: string | null;
      root_id: string | null;
      agent: string | null;
      source: SessionSource;
      verdict?: Verdict;
    },
    now: number,
  ): SessionDbRow | undefined {
    const existing = this.q.getSession.get(id.session_id);
    const parentRoot =
      id.parent_id !== null && id.parent_id !== id.session_id
        ? (this.q.getSession.get(id.parent_id)?.root_id ?? id.parent_id)
        : null;
    const root = id.root_id ?? parentRoot ?? existing?.root_id ?? id.session_id;
    if (!existing) {
      this.q.insertSession.run({
        session_id: id.session_id,
        parent_id: id.parent_id,
        root_id: root,
        agent: id.agent,
        verdict: id.verdict ?? "ok",
        source: id.source,
        now,
      });
      if (root !== id.session_id) this.q.reroot.run(root, id.session_id, id.session_id);
      return undefined;
    }
    this.q.updateIdentity.run({
      session_id: id.session_id,
      parent_id: id.parent_id,
      root_id: root,
      agent: id.agent,
      now,
    });
    if (root !== existing.root_id && root !== id.session_id) {
      this.q.reroot.run(root, id.session_id, id.session_id);
    }
    return existing;
  }

  // ---- GateStore ----------------------------------------------------------

  /** Learns the caller's identity (parent -> root) and answers whether its session or tree is stopped. */
  decide(identity: GateIdentity, now = Date.now()): GateDecision {
    const conversation = identity.conversation;
    if (conversation === null || conversation.length === 0 || conversation.length > 200) {
      return { refused: false, scope: null, reason: null, rootId: null };
    }
    return this.db.transaction((): GateDecision => {
      this.learnIdentity(
        {
          session_id: conversation,
          parent_id: identity.parent && identity.parent.length <= 200 ? identity.parent : null,
          root_id: null,
          agent: identity.agent ? identity.agent.slice(0, 64) : null,
          source: "gate",
        },
        now,
      );
      if (identity.pluginVersion)
        this.q.setPlugin.run(identity.pluginVersion.slice(0, 64), now, conversation);
      const rootId = this.q.getSession.get(conversation)?.root_id ?? conversation;
      const sess = this.q.getRefusal.get("session", conversation);
      // A recovery's own compaction request passes the scoped refusal it runs under.
      const compacting = identity.agent === "compaction" && this.modes.refusedByMode(conversation);
      if (sess?.state === "stopped" && !compacting) {
        this.modes.countRefusal(conversation, "session", sess.changed_at, now);
        return { refused: true, scope: "session", reason: refusalReason("session", sess), rootId };
      }
      const tree = this.q.getRefusal.get("tree", rootId);
      if (tree?.state === "stopped") {
        this.modes.countRefusal(conversation, "tree", tree.changed_at, now);
        return { refused: true, scope: "tree", reason: refusalReason("tree", tree), rootId };
      }
      const overCap = this.modes.overCap(conversation, rootId, identity.agent);
      return { refused: false, scope: null, reason: null, rootId, ...(overCap ? { overCap } : {}) };
    })();
  }

  /** Stores one gate request record (counts, money, timings; never a body). */
  recordRequest(r: RequestRecord): void {
    this.db.transaction(() => {
      this.q.insertRequest.run({
        ...r,
        refused: r.refused ? 1 : 0,
        status: Math.trunc(r.status),
        duration_ms: Math.max(0, Math.round(r.duration_ms)),
        started_at: Math.round(r.started_at),
      });
      if (r.refused) this.q.bumpCounter.run("refusals_total", 1);
      if (r.conversation !== null) this.q.touchSession.run(r.started_at, r.conversation);
    })();
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
  ) {
    const row = { scope, key, state, reason, by, at };
    this.db.transaction(() => {
      this.q.upsertRefusal.run(row);
      this.q.logRefusal.run(row);
      if (state === "running") {
        if (scope === "tree") {
          // Admin Resume: the hard stop, the cap and the recovery count start over.
          this.q.clearTreeStage.run(key);
          this.q.deleteTreeMode.run(key);
          this.modes.resumeTree(key, at);
        } else this.q.clearSessionStage.run(key);
      }
    })();
    return refusalView({ scope, key, state, reason, changed_by: by, changed_at: at });
  }

  refusal(scope: RefusalScope, key: string): RefusalView | null {
    const r = this.q.getRefusal.get(scope, key);
    return r ? refusalView(r) : null;
  }

  refusals(): RefusalView[] {
    return this.q.refusals.all().map(refusalView);
  }

  refusalLog(limit = 100): RefusalView[] {
    return this.q.refusalLog.all(limit).map(refusalView);
  }

  // ---- reads --------------------------------------------------------------

  /** Sessions, most recently seen first. plugin_live: a plugin report within `liveWindowMs`. */
  sessions(opts: { now: number; liveWindowMs: number; limit?: number }): SessionView[] {
    return this.q.sessions.all(opts.limit ?? 2000).map((r) => {
      const gate = r.g_requests > 0;
      const treeStopped = r.tree_state === "stopped";
      const sessStopped = r.sess_state === "stopped";
      return {
        session_id: r.session_id,
        parent_id: r.parent_id,
        root_id: r.root_id,
        agent: r.agent,
        verdict: r.verdict,
        worst: r.worst,
        flags: r.flags,
        stage: r.stage,
        plugin_live: r.plugin_seen_at !== null && opts.now - r.plugin_seen_at <= opts.liveWindowMs,
        plugin_version: r.plugin_version,
        turns_since_landed: gate ? r.g_turns : r.turns_since_landed,
        usd_since_landed: Math.round((gate ? r.g_usd : r.usd_since_landed) * 1e6) / 1e6,
        context_tokens: gate && r.g_ctx !== null ? r.g_ctx : r.context_tokens,
        top_target: r.top_target,
        top_target_count: r.top_target_count,
        source: r.source,
        last_seen_at: r.last_seen_at,
        last_landed_at: r.last_landed_at,
        reason: r.reason,
        report: r.report,
        refused: treeStopped || sessStopped,
        stopped_by: sessStopped ? r.sess_by : treeStopped ? r.tree_by : null,
        stopped_at: sessStopped ? r.sess_at : treeStopped ? r.tree_at : null,
        spend_source: gate ? "gate" : "reporter",
        cannot_act: r.cannot_act ?? null,
      };
    });
  }

  events(limit: number): EventView[] {
    return this.q.events.all(Math.max(1, Math.min(10_000, Math.floor(limit))));
  }

  lastWatchdogTick(): WatchdogTickView | null {
    const r = this.q.lastTick.get();
    return r ? { ...r, blind: r.blind === 1 } : null;
  }

  metrics(opts: { now: number; liveWindowMs: number }): MetricsSnapshot {
    const sessionsByVerdict: Record<Verdict, number> = { ok: 0, stalling: 0, looping: 0 };
    for (const r of this.q.byVerdict.all()) sessionsByVerdict[r.verdict] = r.n;
    const counters: Record<string, number> = {};
    for (const r of this.q.counters.all()) counters[r.name] = r.value;
    return {
      sessionsByVerdict,
      counters,
      livePlugins: this.q.livePlugins.get(opts.now - opts.liveWindowMs)?.n ?? 0,
      stoppedTrees: this.q.stoppedCount.get("tree")?.n ?? 0,
      stoppedSessions: this.q.stoppedCount.get("session")?.n ?? 0,
      lastTick: this.lastWatchdogTick(),
    };
  }

  /** Adds to a durable counter (for figures that must survive restarts, e.g. rejected bodies). */
  bump(name: string, by = 1): void {
    this.q.bumpCounter.run(name, by);
  }

  /** Throws when the database cannot answer. */
  ping(): void {
    this.q.ping.get();
  }

  // ---- knob overrides -----------------------------------------------------

  knobOverrides(): KnobOverride[] {
    return this.q.knobs.all().map((r) => ({ ...r, value: JSON.parse(r.value) as unknown }));
  }

  setKnobOverride(path: string, value: unknown, by: string, at: number): void {
    this.q.setKnob.run(path, JSON.stringify(value), by, at);
  }

  deleteKnobOverride(path: string): boolean {
    return this.q.deleteKnob.run(path).changes > 0;
  }

  // ---- retention ----------------------------------------------------------

  /** Deletes history older than `retentionMs`. Stopped trees and their sessions are kept until resumed. */
  prune(now: number, retentionMs: number): PruneResult {
    const cutoff = now - retentionMs;
    return this.db.transaction((): PruneResult => {
      // A resumed refusal older than the window is history only (the log keeps it until pruned too).
      this.q.pruneRunningRefusals.run(cutoff);
      this.q.pruneTreeModes.run(cutoff);
      this.modes.prune(cutoff);
      return {
        transitions: this.q.pruneTransitions.run(cutoff).changes,
        requests: this.q.pruneRequests.run(cutoff).changes,
        ticks: this.q.pruneTicks.run(cutoff).changes,
        refusalLog: this.q.pruneRefusalLog.run(cutoff).changes,
        plugins: this.q.prunePlugins.run(cutoff).changes,
        sessions: this.q.pruneSessions.run({ cutoff }).changes,
      };
    })();
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

function refusalReason(scope: RefusalScope, r: RefusalDbRow): string {
  const what = scope === "tree" ? "its session tree" : "this session";
  const why = r.reason ? ` (${r.reason})` : "";
  return `${what} was stopped by ${r.changed_by} at ${new Date(r.changed_at).toISOString()}${why}`;
}
