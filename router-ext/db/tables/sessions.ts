// sessions: one row per session seen by a reporter or the gate: identity
// (parent, root, agent), the current and worst verdict, the mode stage, and
// the reporter's spend numbers. Ids, verdicts, counts and the deterministic
// incident report only.

import { VERDICT_RANK, type Verdict } from "../../../shared/index.ts";
import type { RefusalState, SessionSource, SessionStage } from "../../api/schemas.ts";
import type { Sql } from "../../store/sql.ts";
import { later } from "./later.ts";
import type { MarkKind } from "./marks.ts";

/** A row of the router's sessions table (not opencode's session: router-ext/opencode-db/reader.ts SessionRow). */
export interface RouterSessionRow {
  session_id: string;
  parent_id: string | null;
  root_id: string;
  agent: string | null;
  verdict: Verdict;
  worst: Verdict;
  flags: number;
  stage: SessionStage;
  cannot_act: string | null;
  reason: string | null;
  report: string | null;
  verdict_at: number | null;
  turns_since_landed: number;
  usd_since_landed: number;
  last_landed_at: number | null;
  context_tokens: number;
  stats_at: number | null;
  top_target: string | null;
  top_target_count: number;
  source: SessionSource;
  plugin_version: string | null;
  /** The last report (transition or heartbeat) from a plugin. */
  plugin_seen_at: number | null;
  /** The last model request through the gate that carried the plugin's headers. */
  plugin_headers_at: number | null;
  first_seen_at: number;
  last_seen_at: number;
  /** The reporter's current figures; null until a plugin sends them. */
  calls: number | null;
  landed: number | null;
  /** What opencode shows the user about the session; null until a plugin sends it. */
  title: string | null;
  directory: string | null;
  created_at: number | null;
}

/** A row with its refusals and the gate's spend since the session's last landed change. */
export interface SessionListRow extends RouterSessionRow {
  tree_state: RefusalState | null;
  tree_by: string | null;
  tree_at: number | null;
  sess_state: RefusalState | null;
  sess_by: string | null;
  sess_at: number | null;
  g_requests: number;
  g_turns: number;
  g_usd: number;
  g_ctx: number | null;
  mark_kind: MarkKind | null;
  mark_by: string | null;
  mark_at: number | null;
  mark_verdict: Verdict | null;
  mark_reason: string | null;
}

export interface Identity {
  session_id: string;
  parent_id: string | null;
  /** The root as the reporter knows it; null: derive it from the parent. */
  root_id: string | null;
  agent: string | null;
  source: SessionSource;
  verdict?: Verdict;
}

export interface VerdictUpdate {
  session_id: string;
  verdict: Verdict;
  reason: string | null;
  report: string | null;
  at: number;
  top_target: string | null;
  top_target_count: number;
  source: SessionSource;
  stage: SessionStage;
  cannot_act: string | null;
}

export interface StatsUpdate {
  session_id: string;
  turns: number;
  /** null keeps the stored figure (a heartbeat from an older plugin carries no money). */
  usd: number | null;
  last_landed_at: number | null;
  context_tokens: number;
  /** null keeps the stored figure (an older plugin's heartbeat has none). */
  calls: number | null;
  landed: number | null;
  /** The most repeated call now; undefined keeps the stored one. */
  top?: { target: string | null; count: number };
  at: number;
}

/** The title, folder and creation time opencode shows; a null keeps what is stored. */
export interface SessionDescription {
  session_id: string;
  title: string | null;
  directory: string | null;
  created_at: number | null;
}

const worse = (a: Verdict, b: Verdict): Verdict => (VERDICT_RANK[b] > VERDICT_RANK[a] ? b : a);

export interface ChildRow {
  session_id: string;
  agent: string | null;
  verdict: Verdict;
}

/**
 * A session an admin must see whatever the volume: flagged now or before,
 * refused now (its tree or itself), or marked. Written over listSql's joins.
 */
const ATTENTION = `(s.verdict <> 'ok' OR s.worst <> 'ok' OR s.flags > 0
  OR COALESCE(rt.state, '') = 'stopped' OR COALESCE(rs.state, '') = 'stopped' OR m.kind IS NOT NULL)`;
const JOINS = `FROM sessions s
       LEFT JOIN refusals rt ON rt.scope = 'tree' AND rt.key = s.root_id
       LEFT JOIN refusals rs ON rs.scope = 'session' AND rs.key = s.session_id
       LEFT JOIN session_marks m ON m.session_id = s.session_id`;

/** The gate's requests of a session and its direct children since the session's last landed change. */
const SINCE_LANDED = `q.session_id IN (SELECT s.session_id UNION ALL SELECT c.session_id FROM sessions c WHERE c.parent_id = s.session_id)
              AND q.refused = 0 AND q.started_at > COALESCE(s.last_landed_at, -1)`;

/**
 * Sessions with their refusals, their mark and the gate's spend since their
 * last landed change (the session and its direct children), filtered by `where`.
 */
function listSql(where: string, tail: string): string {
  return `SELECT s.*,
         rt.state AS tree_state, rt.changed_by AS tree_by, rt.changed_at AS tree_at,
         rs.state AS sess_state, rs.changed_by AS sess_by, rs.changed_at AS sess_at,
         m.kind AS mark_kind, m.marked_by AS mark_by, m.marked_at AS mark_at,
         m.verdict AS mark_verdict, m.reason AS mark_reason,
         (SELECT COUNT(*) FROM requests q WHERE q.session_id = s.session_id) AS g_requests,
         (SELECT COUNT(*) FROM requests q WHERE ${SINCE_LANDED}) AS g_turns,
         (SELECT COALESCE(SUM(q.cost_usd), 0) FROM requests q WHERE ${SINCE_LANDED}) AS g_usd,
         (SELECT q.context_tokens FROM requests q WHERE q.session_id = s.session_id AND q.context_tokens IS NOT NULL AND q.refused = 0
            ORDER BY q.started_at DESC LIMIT 1) AS g_ctx
       ${JOINS}
       ${where} ${tail}`;
}

/** Every statement the sessions table runs. */
const SQL = {
  get: "SELECT * FROM sessions WHERE session_id = ?",
  insert: `INSERT INTO sessions (session_id, parent_id, root_id, agent, verdict, worst, source, first_seen_at, last_seen_at)
       VALUES (@session_id, @parent_id, @root_id, @agent, @verdict, @verdict, @source, @now, @now)`,
  identity: `UPDATE sessions SET parent_id = COALESCE(@parent_id, parent_id), root_id = @root_id,
         agent = COALESCE(@agent, agent), last_seen_at = ${later("last_seen_at", "@now")} WHERE session_id = @session_id`,
  reroot: "UPDATE sessions SET root_id = ? WHERE root_id = ? AND session_id <> ?",
  plugin: `UPDATE sessions SET plugin_version = @version,
         plugin_seen_at = ${later("COALESCE(plugin_seen_at, 0)", "@at")},
         source = CASE WHEN source = 'gate' THEN 'plugin' ELSE source END
       WHERE session_id = @session_id`,
  headers: `UPDATE sessions SET plugin_version = @version,
         plugin_headers_at = ${later("COALESCE(plugin_headers_at, 0)", "@at")} WHERE session_id = @session_id`,
  verdict: `UPDATE sessions SET verdict = @verdict, reason = @reason, report = @report, verdict_at = @at,
         top_target = @top_target, top_target_count = @top_target_count, source = @source, stage = @stage,
         cannot_act = @cannot_act
       WHERE session_id = @session_id`,
  flags: `UPDATE sessions SET worst = @worst, flags = flags + @flag, last_seen_at = ${later("last_seen_at", "@now")}
       WHERE session_id = @session_id`,
  stats: `UPDATE sessions SET turns_since_landed = @turns, usd_since_landed = COALESCE(@usd, usd_since_landed),
         last_landed_at = @last_landed_at, context_tokens = @context_tokens, stats_at = @at,
         calls = COALESCE(@calls, calls), landed = COALESCE(@landed, landed),
         top_target = CASE WHEN @has_top = 1 THEN @top_target ELSE top_target END,
         top_target_count = CASE WHEN @has_top = 1 THEN @top_target_count ELSE top_target_count END
       WHERE session_id = @session_id AND COALESCE(stats_at, -1) <= @at`,
  describe: `UPDATE sessions SET title = COALESCE(@title, title), directory = COALESCE(@directory, directory),
         created_at = COALESCE(@created_at, created_at) WHERE session_id = @session_id`,
  touch: `UPDATE sessions SET last_seen_at = ${later("last_seen_at", "@at")} WHERE session_id = @session_id`,
  list: listSql("", "ORDER BY s.last_seen_at DESC LIMIT ?"),
  attention: listSql(`WHERE ${ATTENTION}`, "ORDER BY s.last_seen_at DESC LIMIT ?"),
  quiet: listSql(`WHERE NOT ${ATTENTION}`, "ORDER BY s.last_seen_at DESC LIMIT ? OFFSET ?"),
  counts: `SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN ${ATTENTION} THEN 1 ELSE 0 END), 0) AS attention ${JOINS}`,
  flagged: listSql(
    "WHERE s.verdict <> 'ok'",
    "ORDER BY CASE s.verdict WHEN 'looping' THEN 0 ELSE 1 END, s.last_seen_at DESC LIMIT ?",
  ),
  one: listSql("WHERE s.session_id = ?", ""),
  children:
    "SELECT session_id, agent, verdict FROM sessions WHERE parent_id = ? ORDER BY first_seen_at LIMIT ?",
  byVerdict: "SELECT verdict, COUNT(*) AS n FROM sessions GROUP BY verdict",
  clearTreeStage: "UPDATE sessions SET stage = 'none' WHERE root_id = ? AND stage = 'stopped'",
  clearStage: "UPDATE sessions SET stage = 'none' WHERE session_id = ? AND stage = 'stopped'",
  prune: `DELETE FROM sessions WHERE last_seen_at < @cutoff
         AND root_id NOT IN (SELECT key FROM refusals WHERE scope = 'tree' AND state = 'stopped')
         AND session_id NOT IN (SELECT key FROM refusals WHERE scope = 'session' AND state = 'stopped')`,
};

/**
 * Inserts or updates a session's identity; returns the row as it was (undefined: new).
 * When a session that was its own root learns a parent, every session filed
 * under it moves to the new root, so a tree learnt bottom-up ends up under one root.
 */
async function learnIdentity(sql: Sql, id: Identity, now: number): Promise<RouterSessionRow | undefined> {
  const existing = await sql.get<RouterSessionRow>(SQL.get, [id.session_id]);
  const parentRoot =
    id.parent_id !== null && id.parent_id !== id.session_id
      ? ((await sql.get<RouterSessionRow>(SQL.get, [id.parent_id]))?.root_id ?? id.parent_id)
      : null;
  const root = id.root_id ?? parentRoot ?? existing?.root_id ?? id.session_id;
  if (!existing) {
    await sql.run(SQL.insert, {
      session_id: id.session_id,
      parent_id: id.parent_id,
      root_id: root,
      agent: id.agent,
      verdict: id.verdict ?? "ok",
      source: id.source,
      now,
    });
    if (root !== id.session_id) await sql.run(SQL.reroot, [root, id.session_id, id.session_id]);
    return undefined;
  }
  await sql.run(SQL.identity, {
    session_id: id.session_id,
    parent_id: id.parent_id,
    root_id: root,
    agent: id.agent,
    now,
  });
  if (root !== existing.root_id && root !== id.session_id)
    await sql.run(SQL.reroot, [root, id.session_id, id.session_id]);
  return existing;
}

/** What reports and admin actions write: identity, plugin contact, verdicts, figures, stages. */
function sessionWrites(sql: Sql) {
  return {
    learn: (id: Identity, now: number) => learnIdentity(sql, id, now),
    /** A plugin reported the session (plugin_live reads plugin_seen_at). */
    async pluginSeen(sessionId: string, version: string, at: number): Promise<void> {
      await sql.run(SQL.plugin, { version, at, session_id: sessionId });
    },
    /** The gate saw the plugin's headers on the session's request (loaded, not necessarily reporting). */
    async headersSeen(sessionId: string, version: string, at: number): Promise<void> {
      await sql.run(SQL.headers, { version, at, session_id: sessionId });
    },
    async setVerdict(u: VerdictUpdate): Promise<void> {
      await sql.run(SQL.verdict, { ...u });
    },
    /** Counts a flag (ok -> stalling or looping) and keeps the worst verdict seen. */
    async flag(
      sessionId: string,
      was: Verdict,
      verdict: Verdict,
      flagged: boolean,
      now: number,
    ): Promise<void> {
      await sql.run(SQL.flags, {
        session_id: sessionId,
        worst: worse(was, verdict),
        flag: flagged ? 1 : 0,
        now,
      });
    },
    /** The reporter's spend numbers; an older report than the stored one changes nothing. */
    async setStats(u: StatsUpdate): Promise<void> {
      const { top, ...rest } = u;
      await sql.run(SQL.stats, {
        ...rest,
        has_top: top ? 1 : 0,
        top_target: top?.target ?? null,
        top_target_count: top?.count ?? 0,
      });
    },
    /** What opencode shows of the session (a heartbeat's title, folder and creation time). */
    async describe(d: SessionDescription): Promise<void> {
      if (d.title === null && d.directory === null && d.created_at === null) return;
      await sql.run(SQL.describe, { ...d });
    },
    async touch(sessionId: string, at: number): Promise<void> {
      await sql.run(SQL.touch, { at, session_id: sessionId });
    },
    /** A resumed tree (or session) no longer shows the hard stop's stage. */
    async clearStopped(scope: "tree" | "session", key: string): Promise<void> {
      await sql.run(scope === "tree" ? SQL.clearTreeStage : SQL.clearStage, [key]);
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run(SQL.prune, { cutoff })).changes;
    },
  };
}

/** What the admin page, the API and /metrics read. */
function sessionReads(sql: Sql) {
  return {
    get(sessionId: string): Promise<RouterSessionRow | undefined> {
      return sql.get(SQL.get, [sessionId]);
    },
    async rootOf(sessionId: string): Promise<string> {
      return (await sql.get<RouterSessionRow>(SQL.get, [sessionId]))?.root_id ?? sessionId;
    },
    list(limit: number): Promise<SessionListRow[]> {
      return sql.all(SQL.list, [limit]);
    },
    /** Flagged, refused or marked sessions (see ATTENTION), most recently seen first. */
    attention(limit: number): Promise<SessionListRow[]> {
      return sql.all(SQL.attention, [limit]);
    },
    /** The other sessions, most recently seen first, from `offset`. */
    quiet(limit: number, offset: number): Promise<SessionListRow[]> {
      return sql.all(SQL.quiet, [limit, offset]);
    },
    /** All sessions, and how many of them need attention. */
    async counts(): Promise<{ total: number; attention: number }> {
      return (await sql.get<{ total: number; attention: number }>(SQL.counts)) ?? { total: 0, attention: 0 };
    },
    /** Sessions flagged now, looping first, then most recently seen. */
    flagged(limit: number): Promise<SessionListRow[]> {
      return sql.all(SQL.flagged, [limit]);
    },
    /** One session as list() shows it. */
    one(sessionId: string): Promise<SessionListRow | undefined> {
      return sql.get(SQL.one, [sessionId]);
    },
    /** The session's direct children, first seen first. */
    children(sessionId: string, limit = 200): Promise<ChildRow[]> {
      return sql.all(SQL.children, [sessionId, limit]);
    },
    async countByVerdict(): Promise<Record<Verdict, number>> {
      const out: Record<Verdict, number> = { ok: 0, stalling: 0, looping: 0 };
      for (const r of await sql.all<{ verdict: Verdict; n: number }>(SQL.byVerdict)) out[r.verdict] = r.n;
      return out;
    },
  };
}

export function sessionsTable(sql: Sql) {
  // Not a spread: copying 20 fresh closures into a literal took about 30 us in V8 (bench:
  // every /progress transaction builds its tables), Object.assign about 1 us.
  return Object.assign(sessionReads(sql), sessionWrites(sql));
}
export type SessionsTable = ReturnType<typeof sessionsTable>;
