// The session lists a volume of fresh sessions must not thin out: GET
// /api/sessions (every session that needs attention on every page, then a page
// of the others) and the flagged sessions behind /metrics' warning series.
import type { SessionsResponse, SessionView } from "../api/schemas.ts";
import type { Tables } from "./open-tables.ts";
import { sessionView } from "./views.ts";

/** Flagged, refused or marked sessions one GET /api/sessions answer carries at most. */
export const ATTENTION_MAX = 5000;

interface ViewClock {
  now: number;
  /** A plugin heard from within this long is live. */
  liveWindowMs: number;
}

/**
 * One answer of GET /api/sessions: every session that needs attention (flagged
 * now or before, refused, marked; at most ATTENTION_MAX), so no volume of fresh
 * sessions hides one, then `limit` of the others from `offset`, most recently
 * seen first; the totals say what this answer leaves out.
 */
export async function sessionPage(
  tables: Tables,
  opts: ViewClock & { limit: number; offset: number },
): Promise<SessionsResponse> {
  const t = tables.sessions;
  const { total, attention } = await t.counts();
  const first = await t.attention(ATTENTION_MAX);
  const rest = await t.quiet(opts.limit, opts.offset);
  const after = opts.offset + rest.length;
  return {
    sessions: [...first, ...rest].map((r) => sessionView(r, opts)),
    total,
    attention,
    offset: opts.offset,
    limit: opts.limit,
    truncated: first.length + rest.length < total,
    next_offset: after < total - attention ? after : null,
  };
}

/** Sessions flagged now, looping first, then most recently seen (/metrics' warning series). */
export async function flaggedSessions(
  tables: Tables,
  opts: ViewClock & { limit: number },
): Promise<SessionView[]> {
  return (await tables.sessions.flagged(opts.limit)).map((r) => sessionView(r, opts));
}
