// The durable half of the modes, over the store's tables (router-ext/db/tables):
// scoped session refusals set by a recovery and lifted when it completes,
// the hard stop's tree refusal, directives kept until the plugin acknowledges
// them (re-sent on later /progress answers, so they survive a router
// restart), per-tree context caps, and refusals counted once per session
// instead of once per request. The gate decides on these from memory
// (gate/facts.ts, modes/gate-decision.ts): the store turns each of these
// writes into a change of its facts.
//
// Ids, counts and the deterministic incident report only; never content.
import type { Directive, DirectiveResult } from "../../shared/index.ts";
import type { Tables } from "../db/open-tables.ts";
import { recoveryCompleted } from "./actions.ts";
import { MODES_ACTOR, type ModeEffects } from "./plan.ts";

export { MODES_ACTOR };

export interface PendingOptions {
  now: number;
  /** A directive is not re-sent sooner than this after its last send. */
  resendMs?: number;
  /** Directives older than this are dropped (never sent again). */
  maxAgeMs?: number;
  /** At most this many sends per directive. */
  maxSends?: number;
}

/**
 * @example
 * const modes = new ModesStore(tables);
 * modes.applyEffects(plan.effects, plan.directives, now); // inside the ingest transaction
 */
export class ModesStore {
  constructor(private readonly t: Tables) {}

  /** Carries out a plan's refusals, caps, hard stop and directives (call inside the ingest transaction). */
  applyEffects(e: ModeEffects, directives: readonly Directive[], now: number): void {
    if (e.hardStop) {
      this.t.directives.closeTree(e.hardStop.rootId, now, "hard_stop");
      this.t.refusals.set({
        scope: "tree",
        key: e.hardStop.rootId,
        state: "stopped",
        by: MODES_ACTOR,
        at: now,
        reason: e.hardStop.reason,
      });
    }
    for (const r of e.refuseSessions) this.setSession(r.sessionId, "stopped", r.reason, now);
    for (const r of e.liftSessions) this.liftSession(r.sessionId, r.reason, now);
    for (const c of e.caps) this.t.caps.set(c.rootId, c.cap, now);
    for (const d of directives) this.t.directives.insert(d, now);
  }

  /**
   * The plugin ran a directive. On success the recovery's scoped refusals in
   * that tree are lifted and the tree state forgets them; on failure they stay
   * (nothing more is spent) until the session lands, goes ok or is resumed.
   * Returns false for an unknown or already answered directive.
   */
  applyResult(r: DirectiveResult, now: number): boolean {
    const row = this.t.directives.get(r.directive_id);
    if (!row || row.done_at !== null) return false;
    this.t.directives.markDone(row.id, now, r.ok, r.ok ? null : r.error);
    this.t.counters.bump(`directive_results_total:${r.ok ? "ok" : "failed"}`);
    if (!r.ok) return true;
    const lifted = new Set(this.t.refusals.stoppedInTree(MODES_ACTOR, row.root_id));
    if (this.t.refusals.get("session", row.session_id)?.state === "stopped") lifted.add(row.session_id);
    for (const key of lifted) this.liftSession(key, `${row.action} completed`, now);
    if (this.t.treeModes.has(row.root_id))
      this.t.treeModes.update(recoveryCompleted(this.t.treeModes.get(row.root_id)), now);
    return true;
  }

  /** The session landed or went ok: a mode's refusal of it has done its job. */
  liftSession(sessionId: string, reason: string, now: number): boolean {
    if (!this.refusedByMode(sessionId)) return false;
    this.setSession(sessionId, "running", reason, now);
    return true;
  }

  /**
   * Admin Resume of a tree: its mode state starts over (no stored state is the
   * initial one), its caps, open directives and mode refusals go.
   */
  resumeTree(rootId: string, now: number): void {
    this.t.treeModes.delete(rootId);
    this.t.caps.delete(rootId);
    this.t.directives.closeTree(rootId, now, "resumed");
    for (const key of this.t.refusals.stoppedInTree(MODES_ACTOR, rootId))
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
    const out: Directive[] = [];
    for (const r of this.t.directives.open(o.now - (o.maxAgeMs ?? 3_600_000))) {
      if (!keys.has(r.session_id) && !keys.has(r.root_id)) continue;
      if (r.sent_count >= maxSends) continue;
      if (r.last_sent_at !== null && o.now - r.last_sent_at < resend) continue;
      this.t.directives.markSent(r.id, o.now);
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

  capOf(rootId: string): number | null {
    return this.t.caps.get(rootId);
  }

  /**
   * Counts one refused request; the refusal counts once per session and
   * refusal (client retries only add to its request count). Returns true for
   * the first request of that refusal.
   */
  countRefusal(sessionId: string, scope: string, refusalAt: number, now: number): boolean {
    const first = this.t.refusedSessions.count(sessionId, scope, refusalAt, now) === 1;
    if (first) this.t.counters.bump("refused_conversations_total");
    return first;
  }

  /** Whether a mode (not an admin) set this session's refusal. */
  refusedByMode(sessionId: string): boolean {
    const r = this.t.refusals.get("session", sessionId);
    return r?.state === "stopped" && r.changed_by === MODES_ACTOR;
  }

  prune(cutoff: number): number {
    return this.t.directives.prune(cutoff) + this.t.refusedSessions.prune(cutoff);
  }

  private setSession(key: string, state: "stopped" | "running", reason: string, at: number): void {
    this.t.refusals.set({ scope: "session", key, state, by: MODES_ACTOR, at, reason });
  }
}
