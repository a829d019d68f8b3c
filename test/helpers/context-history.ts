// Varied gate request histories, and the query the gate's facts read each
// session's context with before (router-ext/db/gate-facts.ts): correct, but it
// sorted every request (about 0.5 s at 200,000). The tests hold the new query
// to this one's answers on SQLite and on PostgreSQL.
import { served } from "../../router-ext/breaker/testing.ts";
import type { RequestRecord } from "../../router-ext/gate/types.ts";

export const CONTEXTS_BEFORE = `WITH compacted AS (
     SELECT session_id, MAX(started_at) AS at FROM requests
     WHERE session_id IS NOT NULL AND agent = 'compaction' GROUP BY session_id),
   measured AS (
     SELECT q.session_id, q.context_tokens, q.started_at,
       ROW_NUMBER() OVER (PARTITION BY q.session_id ORDER BY q.started_at DESC, q.seq DESC) AS n
     FROM requests q LEFT JOIN compacted c ON c.session_id = q.session_id
     WHERE q.session_id IS NOT NULL AND q.refused = 0 AND q.context_tokens IS NOT NULL
       AND COALESCE(q.agent, '') <> 'compaction' AND q.started_at > COALESCE(c.at, -1))
   SELECT s.session_id AS "sessionId", m.context_tokens AS tokens, COALESCE(m.started_at, -1) AS "at",
     COALESCE(c.at, -1) AS "compactedAt"
   FROM (SELECT session_id FROM measured WHERE n = 1 UNION SELECT session_id FROM compacted) s
   LEFT JOIN measured m ON m.session_id = s.session_id AND m.n = 1
   LEFT JOIN compacted c ON c.session_id = s.session_id`;

/**
 * `n` requests from a fixed seed, from `t0` on: ties in time, compactions
 * first, last or alone, refused and unmeasured requests, agents null or
 * named, requests with no session.
 */
export function variedHistory(t0: number, n: number, seed = 7): RequestRecord[] {
  let s = seed;
  const rand = (k: number) => {
    // mulberry32
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % k;
  };
  return Array.from({ length: n }, () => {
    const session = rand(40) === 0 ? null : `s${rand(120)}`;
    return {
      ...served("m", session ?? "x", t0 + rand(400), `root${rand(5)}`),
      session_id: session,
      agent: [null, "build", "compaction", "explore"][rand(4)] ?? null,
      refused: rand(6) === 0,
      context_tokens: rand(5) === 0 ? null : rand(100_000),
    };
  });
}
