// The session page's facts, read from what the router stores: the session's
// row, its transitions (with signals and evidence), the heartbeats' samples,
// the gate's requests of it and its direct children, the refusal log of it and
// its tree, the mode's directives and cap in its tree, and its mark. Each list
// is capped (the latest rows kept); the page derives the picture from these.
import type { RefusalView } from "../api/schemas.ts";
import type { MarkView, SessionDetail } from "../api/session-detail.ts";
import type { Tables } from "./open-tables.ts";
import { refusalView } from "./tables/refusals.ts";
import { sessionView } from "./views.ts";

export const DETAIL_LIMITS = {
  children: 200,
  transitions: 500,
  samples: 2000,
  requests: 5000,
  refusals: 200,
  directives: 100,
};

export async function readSessionDetail(
  t: Tables,
  sessionId: string,
  opts: { now: number; liveWindowMs: number; thresholds: Record<string, number> },
): Promise<SessionDetail | null> {
  const row = await t.sessions.one(sessionId);
  if (!row) return null;
  const session = sessionView(row, opts);
  const children = await t.sessions.children(sessionId, DETAIL_LIMITS.children);
  const refusals: RefusalView[] = (
    await t.refusals.historyFor(sessionId, row.root_id, DETAIL_LIMITS.refusals)
  ).map(refusalView);
  const cap = await t.caps.row(row.root_id);
  return {
    session,
    children,
    transitions: await t.transitions.forSession(sessionId, DETAIL_LIMITS.transitions),
    samples: await t.samples.forSession(sessionId, DETAIL_LIMITS.samples),
    requests: await t.requests.forConversations(
      [sessionId, ...children.map((c) => c.session_id)],
      DETAIL_LIMITS.requests,
    ),
    refusals,
    directives: await t.directives.forTree(row.root_id, DETAIL_LIMITS.directives),
    cap,
    mark: (session.mark ?? null) satisfies MarkView | null,
    thresholds: opts.thresholds,
    now: opts.now,
  };
}
