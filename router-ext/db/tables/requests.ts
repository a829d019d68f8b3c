// requests: one record per proxied (or refused) model request: counts, money
// and timings, never a body; session_id as read from X-Router-Conversation or
// opencode's x-session-id.
import type Database from "better-sqlite3";
import type { RequestView } from "../../api/session-detail.ts";
import type { RequestRecord } from "../../gate/store.ts";

export function requestsTable(db: Database.Database) {
  const insert = db.prepare(
    `INSERT INTO requests (session_id, root_id, agent, parent, model, status, prompt_tokens, completion_tokens,
       cached_tokens, cost_usd, context_tokens, started_at, duration_ms, refused, plugin_version, client, error,
       response_bytes)
     VALUES (@session_id, @root_id, @agent, @parent, @model, @status, @prompt_tokens, @completion_tokens,
       @cached_tokens, @cost_usd, @context_tokens, @started_at, @duration_ms, @refused, @plugin_version, @client,
       @error, @response_bytes)`,
  );
  const forConversations = db.prepare<[string, number], Omit<RequestView, "refused"> & { refused: number }>(
    `SELECT * FROM (SELECT started_at AS at, session_id, agent, status, refused, cost_usd, context_tokens, seq
       FROM requests WHERE session_id IN (SELECT value FROM json_each(?)) ORDER BY started_at DESC, seq DESC LIMIT ?)
     ORDER BY at, seq`,
  );
  const prune = db.prepare("DELETE FROM requests WHERE started_at < ?");
  // Per client key: what each named key spent since a time (the admin page's Clients section).
  const byClient = db.prepare<[number], ClientUsage>(
    `SELECT COALESCE(client, '') AS client, COUNT(*) AS requests, SUM(refused) AS refused,
       SUM(CASE WHEN error IS NOT NULL THEN 1 ELSE 0 END) AS failed,
       COALESCE(SUM(cost_usd), 0) AS cost_usd, MAX(started_at) AS last_at
     FROM requests WHERE started_at >= ? GROUP BY COALESCE(client, '') ORDER BY last_at DESC LIMIT 200`,
  );
  return {
    insert(r: RequestRecord): void {
      insert.run({
        ...r,
        refused: r.refused ? 1 : 0,
        status: Math.trunc(r.status),
        duration_ms: Math.max(0, Math.round(r.duration_ms)),
        started_at: Math.round(r.started_at),
      });
    },
    /** The latest `limit` requests of these sessions, oldest first. */
    forConversations(sessionIds: readonly string[], limit: number): RequestView[] {
      return forConversations.all(JSON.stringify(sessionIds), limit).map((r) => ({
        at: r.at,
        session_id: r.session_id,
        agent: r.agent,
        status: r.status,
        refused: r.refused === 1,
        cost_usd: r.cost_usd,
        context_tokens: r.context_tokens,
      }));
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
    byClient(since: number): ClientUsage[] {
      return byClient.all(since);
    },
  };
}
export interface ClientUsage {
  /** The client key's name; "" for requests recorded before keys were named. */
  client: string;
  requests: number;
  refused: number;
  failed: number;
  cost_usd: number;
  last_at: number;
}

export type RequestsTable = ReturnType<typeof requestsTable>;
