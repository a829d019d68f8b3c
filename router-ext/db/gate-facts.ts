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
  // A few index lookups per session (requests_session, requests_compactions), not a sort of every
  // request (the query before took 490 ms at 200,000 requests, this one 8 to 10 ms; after each
  // retention prune and at start: bench/retention-prune.ts --kept 200000).
  const contexts = await sql.all<{
    sessionId: string;
    tokens: number | null;
    at: number;
    compactedAt: number;
  }>(
    `WITH compacted AS (
         SELECT s.session_id,
           (SELECT MAX(r.started_at) FROM requests r
            WHERE r.session_id = s.session_id AND r.agent = 'compaction') AS at
         FROM (SELECT DISTINCT session_id FROM requests WHERE session_id IS NOT NULL) s),
       latest AS (
         SELECT c.session_id, c.at AS compacted_at,
           (SELECT r.seq FROM requests r
            WHERE r.session_id = c.session_id AND r.started_at > COALESCE(c.at, -1)
              AND r.refused = 0 AND r.context_tokens IS NOT NULL AND COALESCE(r.agent, '') <> 'compaction'
            ORDER BY r.started_at DESC, r.seq DESC LIMIT 1) AS seq
         FROM compacted c)
       SELECT l.session_id AS "sessionId", q.context_tokens AS tokens, COALESCE(q.started_at, -1) AS "at",
         COALESCE(l.compacted_at, -1) AS "compactedAt"
       FROM latest l LEFT JOIN requests q ON q.seq = l.seq
       WHERE l.seq IS NOT NULL OR l.compacted_at IS NOT NULL`,
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
