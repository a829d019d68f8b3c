// The heartbeat's session list: every judged session, most recently active
// first, capped at the wire's 2,000 (the reporter cuts it into pieces under
// the router's body limit). Counts, ids, the coarse top target, and the
// title and folder opencode shows the user; nothing else of a session.
import type { SessionForest } from "../shared/index.ts";
import { type Heartbeat, toHeartbeatFigures } from "../shared/wire.ts";
import type { SessionInfo } from "./session-info.ts";

export function heartbeatSessions(
  forest: SessionForest,
  infoOf: (sessionId: string) => SessionInfo | undefined = () => undefined,
  limit = 2000,
): Heartbeat["sessions"] {
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
        ...toHeartbeatFigures(s),
        ...infoOf(t.id),
      };
    });
}
