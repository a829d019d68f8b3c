// requests: one record per proxied (or refused) model request: counts, money
// and timings, never a body; session_id as read from X-Router-Conversation or
// opencode's x-session-id.
import type { RequestView } from "../../api/session-detail.ts";
import type { RequestRecord } from "../../gate/types.ts";
import type { Sql } from "../../store/sql.ts";

/** Most sessions one forConversations call asks about (a session and its direct children). */
const CONVERSATIONS_MAX = 500;

/** A record's start, duration and status as stored: what insert writes and has() matches. */
function storedTimes(r: RequestRecord) {
  return {
    status: Math.trunc(r.status),
    duration_ms: Math.max(0, Math.round(r.duration_ms)),
    started_at: Math.round(r.started_at),
  };
}

export function requestsTable(sql: Sql) {
  return {
    async insert(r: RequestRecord): Promise<void> {
      await sql.run(
        `INSERT INTO requests (session_id, root_id, agent, parent, model, status, prompt_tokens, completion_tokens,
           cached_tokens, cost_usd, context_tokens, started_at, duration_ms, refused, plugin_version, client, error,
           response_bytes)
         VALUES (@session_id, @root_id, @agent, @parent, @model, @status, @prompt_tokens, @completion_tokens,
           @cached_tokens, @cost_usd, @context_tokens, @started_at, @duration_ms, @refused, @plugin_version, @client,
           @error, @response_bytes)`,
        { ...r, ...storedTimes(r), refused: r.refused ? 1 : 0 },
      );
    },
    /**
     * Whether this record is written: its session (or none), start, duration,
     * status, model and client key. A session's requests follow one another,
     * so two never match; a client that sends no session is told apart by the rest.
     */
    async has(r: RequestRecord): Promise<boolean> {
      const session = r.session_id === null ? "session_id IS NULL" : "session_id = @session_id";
      const row = await sql.get(
        `SELECT 1 AS one FROM requests WHERE ${session} AND started_at = @started_at AND duration_ms = @duration_ms
           AND status = @status AND model IS NOT DISTINCT FROM @model AND client IS NOT DISTINCT FROM @client LIMIT 1`,
        { session_id: r.session_id, model: r.model, client: r.client, ...storedTimes(r) },
      );
      return row !== undefined;
    },
    /** The latest `limit` requests of these sessions, oldest first. */
    async forConversations(sessionIds: readonly string[], limit: number): Promise<RequestView[]> {
      const ids = sessionIds.slice(0, CONVERSATIONS_MAX);
      if (ids.length === 0) return [];
      const rows = await sql.all<Omit<RequestView, "refused"> & { refused: number }>(
        `SELECT * FROM (SELECT started_at AS at, session_id, agent, status, refused, cost_usd, context_tokens, seq
           FROM requests WHERE session_id IN (${ids.map(() => "?").join(", ")})
           ORDER BY started_at DESC, seq DESC LIMIT ?) AS latest
         ORDER BY at, seq`,
        [...ids, limit],
      );
      return rows.map((r) => ({
        at: r.at,
        session_id: r.session_id,
        agent: r.agent,
        status: r.status,
        refused: r.refused === 1,
        cost_usd: r.cost_usd,
        context_tokens: r.context_tokens,
      }));
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM requests WHERE started_at < ?", [cutoff])).changes;
    },
    /** Deletes at most `limit` of the requests prune() would (retention's chunks); how many it did. */
    async pruneSome(cutoff: number, limit: number): Promise<number> {
      const sel = "SELECT seq FROM requests WHERE started_at < ? LIMIT ?";
      return (await sql.run(`DELETE FROM requests WHERE seq IN (${sel})`, [cutoff, limit])).changes;
    },
    /** Per client key: what each named key spent since a time (the admin page's Clients section). */
    byClient(since: number): Promise<ClientUsage[]> {
      return sql.all(
        `SELECT COALESCE(client, '') AS client, COUNT(*) AS requests, SUM(refused) AS refused,
           SUM(CASE WHEN error IS NOT NULL THEN 1 ELSE 0 END) AS failed,
           COALESCE(SUM(cost_usd), 0) AS cost_usd, MAX(started_at) AS last_at
         FROM requests WHERE started_at >= ? GROUP BY COALESCE(client, '') ORDER BY last_at DESC LIMIT 200`,
        [since],
      );
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
