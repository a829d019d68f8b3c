// The gate's facts in the store: read in one go at start (and after a prune,
// or when another replica changed them),
// and kept current by wrapping the table writes that change them (a refusal
// set or lifted, a session filed under a root, a cap set or removed), each
// turned into a GateFactChange for the store to apply once its transaction
// committed. The wrapping adds no statement after a commit.
import type { GateFactChange, GateFactsSnapshot } from "../gate/facts.ts";
import type { Sql } from "../store/sql.ts";
import type { Tables } from "./open-tables.ts";

/** Everything the gate decides on, read from the tables. */
export async function readGateFacts(sql: Sql): Promise<GateFactsSnapshot> {
  // Quoted aliases: PostgreSQL folds unquoted ones to lower case.
  const refusals = await sql.all<{
    scope: "session" | "tree";
    key: string;
    by: string;
    at: number;
    reason: string | null;
  }>(
    `SELECT scope, key, changed_by AS "by", changed_at AS "at", reason FROM refusals WHERE state = 'stopped'`,
  );
  const roots = await sql.all<{ sessionId: string; rootId: string }>(
    `SELECT session_id AS "sessionId", root_id AS "rootId" FROM sessions`,
  );
  const caps = await sql.all<{ rootId: string; cap: number }>(
    `SELECT root_id AS "rootId", cap FROM context_caps`,
  );
  // Per session: its latest compaction, and its latest measured request after it (the gate's cap rule).
  const contexts = await sql.all<{
    sessionId: string;
    tokens: number | null;
    at: number;
    compactedAt: number;
  }>(
    `WITH compacted AS (
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
       LEFT JOIN compacted c ON c.session_id = s.session_id`,
  );
  return { refusals, roots, caps, contexts };
}

/**
 * The tables with their fact-changing writes reporting to `emit`: refusals.set,
 * caps.set and caps.delete, and sessions.learn (the root it filed the session
 * under, read back inside the same transaction).
 */
export function observeGateFacts(t: Tables, emit: (c: GateFactChange) => void): Tables {
  const { refusals, caps, sessions } = t;
  return {
    ...t,
    refusals: {
      ...refusals,
      async set(change) {
        await refusals.set(change);
        emit({ kind: "refusal", ...change });
      },
    },
    caps: {
      ...caps,
      async set(rootId, cap, at) {
        await caps.set(rootId, cap, at);
        const stored = await caps.get(rootId);
        emit({ kind: "cap", rootId, cap: stored });
      },
      async delete(rootId) {
        await caps.delete(rootId);
        emit({ kind: "cap", rootId, cap: null });
      },
    },
    sessions: {
      ...sessions,
      async learn(id, now) {
        const before = await sessions.learn(id, now);
        emit({ kind: "root", sessionId: id.session_id, rootId: await sessions.rootOf(id.session_id) });
        return before;
      },
    },
  };
}
