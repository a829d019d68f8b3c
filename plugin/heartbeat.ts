// The heartbeat's session list: every judged session, most recently active
// first, capped at the wire's 2,000 (the reporter cuts it into pieces under
// the router's body limit). Counts and ids only.
import type { SessionForest } from "../shared/index.ts";
import type { Heartbeat } from "../shared/wire.ts";

export function heartbeatSessions(forest: SessionForest, limit = 2000): Heartbeat["sessions"] {
  return forest
    .ids()
    .map((id) => forest.get(id))
    .filter((t) => t !== undefined)
    .sort((a, b) => b.lastActivity - a.lastActivity)
    .slice(0, limit)
    .map((t) => {
      const s = t.signals();
      return {
        session_id: t.id,
        parent_id: forest.parentOf(t.id),
        root_id: forest.rootOf(t.id),
        agent: t.agent,
        verdict: t.lastVerdict.verdict,
        turns: s.turns,
        turns_since_landed: s.turnsSinceLanded,
        last_landed_at: s.lastLandedAt === null ? null : Math.max(0, Math.floor(s.lastLandedAt)),
        context_tokens: Math.max(0, Math.floor(s.contextTokens)),
      };
    });
}
