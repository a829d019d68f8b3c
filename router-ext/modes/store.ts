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
import { byMode, directiveResultLifts, okLifts } from "./lifts.ts";
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
 * await modes.applyEffects(plan.effects, plan.directives, now); // inside the /progress transaction
 */
export class ModesStore {
  constructor(private readonly t: Tables) {}

  /** Carries out a plan's refusals, caps, hard stop and directives (call inside the /progress transaction). */
  async applyEffects(e: ModeEffects, directives: readonly Directive[], now: number): Promise<void> {
    if (e.hardStop) {
      await this.t.directives.closeTree(e.hardStop.rootId, now, "hard_stop");
      await this.t.refusals.set({
        scope: "tree",
        key: e.hardStop.rootId,
        state: "stopped",
        by: MODES_ACTOR,
        at: now,
        reason: e.hardStop.reason,
      });
    }
    for (const r of e.refuseSessions) await this.setSession(r.sessionId, "stopped", r.reason, now);
    for (const r of e.liftSessions) await this.liftSession(r.sessionId, r.reason, now);
    for (const c of e.caps) await this.t.caps.set(c.rootId, c.cap, now);
    for (const d of directives) await this.t.directives.insert(d, now);
  }

  /**
   * The plugin ran a directive: what it lifts is modes/lifts.ts
   * (directiveResultLifts); on success the tree state forgets the recovery's
   * refusals. Returns false for an unknown or already answered directive.
   */
  async applyResult(r: DirectiveResult, now: number): Promise<boolean> {
    const row = await this.t.directives.get(r.directive_id);
    if (!row || row.done_at !== null) return false;
    await this.t.directives.markDone(row.id, now, r.ok, r.ok ? null : r.error);
    await this.t.counters.bump(`directive_results_total:${r.ok ? "ok" : "failed"}`);
    if (!r.ok) return true;
    const keys = [...(await this.t.refusals.stoppedInTree(MODES_ACTOR, row.root_id)), row.session_id];
    const candidates = [];
    for (const key of keys) candidates.push({ key, refusal: await this.t.refusals.get("session", key) });
    for (const key of directiveResultLifts(r.ok, candidates))
      await this.setSession(key, "running", `${row.action} completed`, now);
    if (await this.t.treeModes.has(row.root_id))
      await this.t.treeModes.update(recoveryCompleted(await this.t.treeModes.get(row.root_id)), now);
    return true;
  }

  /** A plan's effect lifts the session: only a mode's own refusal of it goes (modes/lifts.ts byMode). */
  async liftSession(sessionId: string, reason: string, now: number): Promise<boolean> {
    if (!(await this.refusedByMode(sessionId))) return false;
    await this.setSession(sessionId, "running", reason, now);
    return true;
  }

  /** A heartbeat reported the session's verdict: lifted when modes/lifts.ts okLifts says so. */
  async reportedVerdict(
    sessionId: string,
    verdict: "ok" | "stalling" | "looping",
    now: number,
  ): Promise<boolean> {
    if (!okLifts(verdict, await this.t.refusals.get("session", sessionId))) return false;
    await this.setSession(sessionId, "running", "session ok", now);
    return true;
  }

  /**
   * Admin Resume of a tree: its mode state starts over (no stored state is the
   * initial one), its caps, open directives and mode refusals go.
   */
  async resumeTree(rootId: string, now: number): Promise<void> {
    await this.t.treeModes.delete(rootId);
    await this.t.caps.delete(rootId);
    await this.t.directives.closeTree(rootId, now, "resumed");
    for (const key of await this.t.refusals.stoppedInTree(MODES_ACTOR, rootId))
      await this.setSession(key, "running", "tree resumed", now);
  }

  /**
   * Open directives for the sessions a plugin just reported (session or root
   * id), marked sent. Unacknowledged directives come back on later answers.
   */
  async pendingFor(keys: ReadonlySet<string>, o: PendingOptions): Promise<Directive[]> {
    if (keys.size === 0) return [];
    const resend = o.resendMs ?? 5000;
    const maxSends = o.maxSends ?? 20;
    const out: Directive[] = [];
    for (const r of await this.t.directives.open(o.now - (o.maxAgeMs ?? 3_600_000))) {
      if (!keys.has(r.session_id) && !keys.has(r.root_id)) continue;
      if (r.sent_count >= maxSends) continue;
      if (r.last_sent_at !== null && o.now - r.last_sent_at < resend) continue;
      await this.t.directives.markSent(r.id, o.now);
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

  capOf(rootId: string): Promise<number | null> {
    return this.t.caps.get(rootId);
  }

  /**
   * Counts one refused request; the refusal counts once per session and
   * refusal (client retries only add to its request count). Returns true for
   * the first request of that refusal.
   */
  async countRefusal(sessionId: string, scope: string, refusalAt: number, now: number): Promise<boolean> {
    const first = (await this.t.refusedSessions.count(sessionId, scope, refusalAt, now)) === 1;
    if (first) await this.t.counters.bump("refused_conversations_total");
    return first;
  }

  /** Whether a mode (not an admin) set this session's refusal. */
  async refusedByMode(sessionId: string): Promise<boolean> {
    return byMode(await this.t.refusals.get("session", sessionId));
  }

  async prune(cutoff: number): Promise<number> {
    return (await this.t.directives.prune(cutoff)) + (await this.t.refusedSessions.prune(cutoff));
  }

  private setSession(key: string, state: "stopped" | "running", reason: string, at: number): Promise<void> {
    return this.t.refusals.set({ scope: "session", key, state, by: MODES_ACTOR, at, reason });
  }
}
