// The durable half of the modes, on the same SQLite database as the policy
// store (router-ext/db/store.ts delegates here): scoped session refusals set
// by a recovery and lifted when it completes, directives kept until the plugin
// acknowledges them (re-sent on later /progress answers, so they survive a
// router restart), per-tree context caps for the gate, and refusals counted
// once per conversation instead of once per request.
//
// Ids, counts and the deterministic incident report only; never content.
import { createHash } from "node:crypto";
import type Database from "better-sqlite3";
import type { Directive, DirectiveResult } from "../../shared/index.ts";
import { parseTreeState, recoveryCompleted } from "./policy.ts";

/** Who a mode's own refusals are recorded as (an admin's are recorded by name). */
export const MODES_ACTOR = "stallguard";

/** What a transition's mode actions change in the store (computed by server/stage.ts). */
export interface ModeEffects {
  refuseSessions: Array<{ sessionId: string; reason: string }>;
  directives: Directive[];
  caps: Array<{ rootId: string; cap: number }>;
  /** Trees hard-stopped (stage 3): their open directives are dropped, nothing restarts them. */
  hardStops: string[];
}

export const NO_EFFECTS: ModeEffects = { refuseSessions: [], directives: [], caps: [], hardStops: [] };

/** The directive id for a transition: the same transition always names the same directive. */
export function directiveId(transitionId: string): string {
  return `d:${createHash("sha256").update(transitionId).digest("base64url").slice(0, 32)}`;
}

export interface OverCap {
  cap: number;
  /** The conversation's last measured context (prompt tokens) since its last compaction. */
  tokens: number;
}

export interface PendingOptions {
  now: number;
  /** A directive is not re-sent sooner than this after its last send. */
  resendMs?: number;
  /** Directives older than this are dropped (never sent again). */
  maxAgeMs?: number;
  /** At most this many sends per directive. */
  maxSends?: number;
}

interface DirectiveRow {
  id: string;
  action: "compact" | "recover";
  session_id: string;
  root_id: string;
  report: string;
  created_at: number;
  sent_count: number;
  last_sent_at: number | null;
  done_at: number | null;
}

function prepare(db: Database.Database) {
  return {
    insertDirective: db.prepare(
      `INSERT INTO mode_directives (id, action, session_id, root_id, report, created_at)
       VALUES (@id, @action, @session_id, @root_id, @report, @now) ON CONFLICT(id) DO NOTHING`,
    ),
    openDirectives: db.prepare<[number], DirectiveRow>(
      "SELECT * FROM mode_directives WHERE done_at IS NULL AND created_at >= ? ORDER BY created_at",
    ),
    getDirective: db.prepare<[string], DirectiveRow>("SELECT * FROM mode_directives WHERE id = ?"),
    markSent: db.prepare(
      "UPDATE mode_directives SET sent_count = sent_count + 1, last_sent_at = ? WHERE id = ?",
    ),
    markDone: db.prepare(
      "UPDATE mode_directives SET done_at = @at, ok = @ok, error = @error WHERE id = @id AND done_at IS NULL",
    ),
    closeTreeDirectives: db.prepare(
      "UPDATE mode_directives SET done_at = ?, ok = 0, error = ? WHERE root_id = ? AND done_at IS NULL",
    ),
    getRefusal: db.prepare<[string], { state: string; changed_by: string; changed_at: number }>(
      "SELECT state, changed_by, changed_at FROM refusals WHERE scope = 'session' AND key = ?",
    ),
    upsertRefusal: db.prepare(
      `INSERT INTO refusals (scope, key, state, reason, changed_by, changed_at)
       VALUES ('session', @key, @state, @reason, @by, @at)
       ON CONFLICT(scope, key) DO UPDATE SET state = excluded.state, reason = excluded.reason,
         changed_by = excluded.changed_by, changed_at = excluded.changed_at`,
    ),
    logRefusal: db.prepare(
      `INSERT INTO refusal_log (scope, key, state, reason, changed_by, changed_at)
       VALUES ('session', @key, @state, @reason, @by, @at)`,
    ),
    treeSessionRefusals: db.prepare<[string, string], { key: string }>(
      `SELECT r.key FROM refusals r WHERE r.scope = 'session' AND r.state = 'stopped' AND r.changed_by = ?
         AND r.key IN (SELECT session_id FROM sessions WHERE root_id = ? )`,
    ),
    getTreeMode: db.prepare<[string], { state: string }>("SELECT state FROM tree_modes WHERE root_id = ?"),
    setTreeMode: db.prepare("UPDATE tree_modes SET state = ?, updated_at = ? WHERE root_id = ?"),
    setCap: db.prepare(
      `INSERT INTO context_caps (root_id, cap, set_at) VALUES (?, ?, ?)
       ON CONFLICT(root_id) DO UPDATE SET cap = excluded.cap, set_at = excluded.set_at`,
    ),
    getCap: db.prepare<[string], { cap: number }>("SELECT cap FROM context_caps WHERE root_id = ?"),
    deleteCap: db.prepare("DELETE FROM context_caps WHERE root_id = ?"),
    lastContext: db.prepare<[string, string], { tokens: number }>(
      `SELECT context_tokens AS tokens FROM requests
       WHERE conversation = ? AND refused = 0 AND context_tokens IS NOT NULL AND COALESCE(agent, '') <> 'compaction'
         AND started_at > COALESCE((SELECT MAX(started_at) FROM requests WHERE conversation = ? AND agent = 'compaction'), -1)
       ORDER BY started_at DESC, seq DESC LIMIT 1`,
    ),
    countRefused: db.prepare(
      `INSERT INTO refused_conversations (conversation, scope, refusal_at, first_at, last_at, requests)
       VALUES (@conversation, @scope, @refusal_at, @now, @now, 1)
       ON CONFLICT(conversation, scope, refusal_at) DO UPDATE SET last_at = excluded.last_at, requests = requests + 1`,
    ),
    refusedRequests: db.prepare<[string, string, number], { requests: number }>(
      "SELECT requests FROM refused_conversations WHERE conversation = ? AND scope = ? AND refusal_at = ?",
    ),
    bumpCounter: db.prepare(
      "INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
    ),
    pruneDirectives: db.prepare("DELETE FROM mode_directives WHERE created_at < ?"),
    pruneRefused: db.prepare("DELETE FROM refused_conversations WHERE last_at < ?"),
  };
}

/**
 * @example
 * const modes = new ModesStore(db);
 * modes.applyEffects(effects, now); // inside the ingest transaction
 */
export class ModesStore {
  private readonly q: ReturnType<typeof prepare>;

  constructor(db: Database.Database) {
    this.q = prepare(db);
  }

  /** Carries out a transition's refusals, caps and directives (call inside the ingest transaction). */
  applyEffects(e: ModeEffects, now: number): void {
    for (const root of e.hardStops) this.q.closeTreeDirectives.run(now, "hard_stop", root);
    for (const r of e.refuseSessions) this.setSession(r.sessionId, "stopped", r.reason, now);
    for (const c of e.caps) this.q.setCap.run(c.rootId, Math.max(1, Math.floor(c.cap)), now);
    for (const d of e.directives) {
      this.q.insertDirective.run({
        id: d.id,
        action: d.action,
        session_id: d.session_id,
        root_id: d.root_id,
        report: d.report.slice(0, 4000),
        now,
      });
    }
  }

  /**
   * The plugin ran a directive. On success the recovery's scoped refusals in
   * that tree are lifted and the tree state forgets them; on failure they stay
   * (nothing more is spent) until the session lands, goes ok or is resumed.
   * Returns false for an unknown or already answered directive.
   */
  applyResult(r: DirectiveResult, now: number): boolean {
    const row = this.q.getDirective.get(r.directive_id);
    if (!row || row.done_at !== null) return false;
    this.q.markDone.run({ id: row.id, at: now, ok: r.ok ? 1 : 0, error: r.ok ? null : r.error });
    this.q.bumpCounter.run(`directive_results_total:${r.ok ? "ok" : "failed"}`, 1);
    if (!r.ok) return true;
    const lifted = new Set(this.q.treeSessionRefusals.all(MODES_ACTOR, row.root_id).map((x) => x.key));
    if (this.q.getRefusal.get(row.session_id)?.state === "stopped") lifted.add(row.session_id);
    for (const key of lifted) {
      const cur = this.q.getRefusal.get(key);
      if (cur?.state === "stopped" && cur.changed_by === MODES_ACTOR)
        this.setSession(key, "running", `${row.action} completed`, now);
    }
    const tree = this.q.getTreeMode.get(row.root_id);
    if (tree) {
      this.q.setTreeMode.run(
        JSON.stringify(recoveryCompleted(parseTreeState(row.root_id, tree.state))),
        now,
        row.root_id,
      );
    }
    return true;
  }

  /** The session landed or went ok: a mode's refusal of it has done its job. */
  liftSession(sessionId: string, reason: string, now: number): boolean {
    const cur = this.q.getRefusal.get(sessionId);
    if (cur?.state !== "stopped" || cur.changed_by !== MODES_ACTOR) return false;
    this.setSession(sessionId, "running", reason, now);
    return true;
  }

  /** Admin Resume of a tree: its caps, open directives and mode refusals go too. */
  resumeTree(rootId: string, now: number): void {
    this.q.deleteCap.run(rootId);
    this.q.closeTreeDirectives.run(now, "resumed", rootId);
    for (const { key } of this.q.treeSessionRefusals.all(MODES_ACTOR, rootId))
      this.setSession(key, "running", "tree resumed", now);
  }

  /**
   * Open directives for the sessions a plugin just reported (session or root
   * id), marked sent. Unacknowledged directives come back on later answers.
   */
  pendingFor(keys: ReadonlySet<string>, o: PendingOptions): Directive[] {
    if (keys.size === 0) return [];
    const resend = o.resendMs ?? 5000;
    const maxSends = o.maxSends ?? 20;
    const rows = this.q.openDirectives.all(o.now - (o.maxAgeMs ?? 3_600_000));
    const out: Directive[] = [];
    for (const r of rows) {
      if (!keys.has(r.session_id) && !keys.has(r.root_id)) continue;
      if (r.sent_count >= maxSends) continue;
      if (r.last_sent_at !== null && o.now - r.last_sent_at < resend) continue;
      this.q.markSent.run(o.now, r.id);
      out.push({
        id: r.id,
        action: r.action,
        session_id: r.session_id,
        root_id: r.root_id,
        report: r.report,
      });
      if (out.length >= 50) break;
    }
    return out;
  }

  /** The tree's context cap and the conversation's measured context when it is at or over the cap. */
  overCap(conversation: string, rootId: string, agent: string | null): OverCap | null {
    if (agent === "compaction" || agent === "title") return null;
    const cap = this.q.getCap.get(rootId)?.cap;
    if (cap === undefined) return null;
    const tokens = this.q.lastContext.get(conversation, conversation)?.tokens;
    return tokens !== undefined && tokens >= cap ? { cap, tokens } : null;
  }

  capOf(rootId: string): number | null {
    return this.q.getCap.get(rootId)?.cap ?? null;
  }

  /**
   * Counts one refused request; the refusal counts once per conversation and
   * refusal (client retries only add to its request count). Returns true for
   * the first request of that refusal.
   */
  countRefusal(conversation: string, scope: string, refusalAt: number, now: number): boolean {
    this.q.countRefused.run({ conversation, scope, refusal_at: refusalAt, now });
    const first = this.q.refusedRequests.get(conversation, scope, refusalAt)?.requests === 1;
    if (first) this.q.bumpCounter.run("refused_conversations_total", 1);
    return first;
  }

  /** Whether a mode (not an admin) set this session's refusal. */
  refusedByMode(sessionId: string): boolean {
    const r = this.q.getRefusal.get(sessionId);
    return r?.state === "stopped" && r.changed_by === MODES_ACTOR;
  }

  prune(cutoff: number): number {
    return this.q.pruneDirectives.run(cutoff).changes + this.q.pruneRefused.run(cutoff).changes;
  }

  private setSession(key: string, state: "stopped" | "running", reason: string, at: number): void {
    const row = { key, state, reason, by: MODES_ACTOR, at };
    this.q.upsertRefusal.run(row);
    this.q.logRefusal.run(row);
  }
}
