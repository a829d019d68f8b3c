// sessions: one row per session seen by a reporter or the gate: identity
// (parent, root, agent), the current and worst verdict, the mode stage, and
// the reporter's spend numbers. Ids, verdicts, counts and the deterministic
// incident report only.
import type Database from "better-sqlite3";
import { VERDICT_RANK, type Verdict } from "../../../shared/types.ts";
import type { RefusalState, SessionSource, SessionStage } from "../../api/schemas.ts";
import type { MarkKind } from "./marks.ts";

export interface SessionRow {
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
export interface SessionListRow extends SessionRow {
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
         (SELECT COUNT(*) FROM requests q
            WHERE q.session_id IN (SELECT s.session_id UNION ALL SELECT c.session_id FROM sessions c WHERE c.parent_id = s.session_id)
              AND q.refused = 0 AND q.started_at > COALESCE(s.last_landed_at, -1)) AS g_turns,
         (SELECT TOTAL(q.cost_usd) FROM requests q
            WHERE q.session_id IN (SELECT s.session_id UNION ALL SELECT c.session_id FROM sessions c WHERE c.parent_id = s.session_id)
              AND q.refused = 0 AND q.started_at > COALESCE(s.last_landed_at, -1)) AS g_usd,
         (SELECT q.context_tokens FROM requests q WHERE q.session_id = s.session_id AND q.context_tokens IS NOT NULL AND q.refused = 0
            ORDER BY q.started_at DESC LIMIT 1) AS g_ctx
       ${JOINS}
       ${where} ${tail}`;
}

/** Every statement the sessions table runs, prepared once. */
function sessionStatements(db: Database.Database) {
  return {
    get: db.prepare<[string], SessionRow>("SELECT * FROM sessions WHERE session_id = ?"),
    insert: db.prepare(
      `INSERT INTO sessions (session_id, parent_id, root_id, agent, verdict, worst, source, first_seen_at, last_seen_at)
       VALUES (@session_id, @parent_id, @root_id, @agent, @verdict, @verdict, @source, @now, @now)`,
    ),
    identity: db.prepare(
      `UPDATE sessions SET parent_id = COALESCE(@parent_id, parent_id), root_id = @root_id,
         agent = COALESCE(@agent, agent), last_seen_at = MAX(last_seen_at, @now) WHERE session_id = @session_id`,
    ),
    reroot: db.prepare("UPDATE sessions SET root_id = ? WHERE root_id = ? AND session_id <> ?"),
    plugin: db.prepare(
      `UPDATE sessions SET plugin_version = ?, plugin_seen_at = MAX(COALESCE(plugin_seen_at, 0), ?),
         source = CASE WHEN source = 'gate' THEN 'plugin' ELSE source END
       WHERE session_id = ?`,
    ),
    headers: db.prepare(
      "UPDATE sessions SET plugin_version = ?, plugin_headers_at = MAX(COALESCE(plugin_headers_at, 0), ?) WHERE session_id = ?",
    ),
    verdict: db.prepare(
      `UPDATE sessions SET verdict = @verdict, reason = @reason, report = @report, verdict_at = @at,
         top_target = @top_target, top_target_count = @top_target_count, source = @source, stage = @stage,
         cannot_act = @cannot_act
       WHERE session_id = @session_id`,
    ),
    flags: db.prepare(
      "UPDATE sessions SET worst = @worst, flags = flags + @flag, last_seen_at = MAX(last_seen_at, @now) WHERE session_id = @session_id",
    ),
    stats: db.prepare(
      `UPDATE sessions SET turns_since_landed = @turns, usd_since_landed = COALESCE(@usd, usd_since_landed),
         last_landed_at = @last_landed_at, context_tokens = @context_tokens, stats_at = @at,
         calls = COALESCE(@calls, calls), landed = COALESCE(@landed, landed),
         top_target = CASE WHEN @has_top THEN @top_target ELSE top_target END,
         top_target_count = CASE WHEN @has_top THEN @top_target_count ELSE top_target_count END
       WHERE session_id = @session_id AND COALESCE(stats_at, -1) <= @at`,
    ),
    describe: db.prepare(
      `UPDATE sessions SET title = COALESCE(@title, title), directory = COALESCE(@directory, directory),
         created_at = COALESCE(@created_at, created_at) WHERE session_id = @session_id`,
    ),
    touch: db.prepare("UPDATE sessions SET last_seen_at = MAX(last_seen_at, ?) WHERE session_id = ?"),
    list: db.prepare<[number], SessionListRow>(listSql("", "ORDER BY s.last_seen_at DESC LIMIT ?")),
    attention: db.prepare<[number], SessionListRow>(
      listSql(`WHERE ${ATTENTION}`, "ORDER BY s.last_seen_at DESC LIMIT ?"),
    ),
    quiet: db.prepare<[number, number], SessionListRow>(
      listSql(`WHERE NOT ${ATTENTION}`, "ORDER BY s.last_seen_at DESC LIMIT ? OFFSET ?"),
    ),
    counts: db.prepare<[], { total: number; attention: number }>(
      `SELECT COUNT(*) AS total, COALESCE(SUM(${ATTENTION}), 0) AS attention ${JOINS}`,
    ),
    flagged: db.prepare<[number], SessionListRow>(
      listSql(
        "WHERE s.verdict <> 'ok'",
        "ORDER BY CASE s.verdict WHEN 'looping' THEN 0 ELSE 1 END, s.last_seen_at DESC LIMIT ?",
      ),
    ),
    one: db.prepare<[string], SessionListRow>(listSql("WHERE s.session_id = ?", "")),
    children: db.prepare<[string, number], ChildRow>(
      "SELECT session_id, agent, verdict FROM sessions WHERE parent_id = ? ORDER BY first_seen_at LIMIT ?",
    ),
    byVerdict: db.prepare<[], { verdict: Verdict; n: number }>(
      "SELECT verdict, COUNT(*) AS n FROM sessions GROUP BY verdict",
    ),
    clearTreeStage: db.prepare("UPDATE sessions SET stage = 'none' WHERE root_id = ? AND stage = 'stopped'"),
    clearStage: db.prepare("UPDATE sessions SET stage = 'none' WHERE session_id = ? AND stage = 'stopped'"),
    prune: db.prepare(
      `DELETE FROM sessions WHERE last_seen_at < @cutoff
         AND root_id NOT IN (SELECT key FROM refusals WHERE scope = 'tree' AND state = 'stopped')
         AND session_id NOT IN (SELECT key FROM refusals WHERE scope = 'session' AND state = 'stopped')`,
    ),
  };
}
type Statements = ReturnType<typeof sessionStatements>;

/**
 * Inserts or updates a session's identity; returns the row as it was (undefined: new).
 * When a session that was its own root learns a parent, every session filed
 * under it moves to the new root, so a tree learnt bottom-up ends up under one root.
 */
function learnIdentity(q: Statements, id: Identity, now: number): SessionRow | undefined {
  const existing = q.get.get(id.session_id);
  const parentRoot =
    id.parent_id !== null && id.parent_id !== id.session_id
      ? (q.get.get(id.parent_id)?.root_id ?? id.parent_id)
      : null;
  const root = id.root_id ?? parentRoot ?? existing?.root_id ?? id.session_id;
  if (!existing) {
    q.insert.run({
      session_id: id.session_id,
      parent_id: id.parent_id,
      root_id: root,
      agent: id.agent,
      verdict: id.verdict ?? "ok",
      source: id.source,
      now,
    });
    if (root !== id.session_id) q.reroot.run(root, id.session_id, id.session_id);
    return undefined;
  }
  q.identity.run({
    session_id: id.session_id,
    parent_id: id.parent_id,
    root_id: root,
    agent: id.agent,
    now,
  });
  if (root !== existing.root_id && root !== id.session_id) q.reroot.run(root, id.session_id, id.session_id);
  return existing;
}

/** What reports and admin actions write: identity, plugin contact, verdicts, figures, stages. */
function sessionWrites(q: Statements) {
  return {
    learn: (id: Identity, now: number) => learnIdentity(q, id, now),
    /** A plugin reported the session (plugin_live reads plugin_seen_at). */
    pluginSeen(sessionId: string, version: string, at: number): void {
      q.plugin.run(version, at, sessionId);
    },
    /** The gate saw the plugin's headers on the session's request (loaded, not necessarily reporting). */
    headersSeen(sessionId: string, version: string, at: number): void {
      q.headers.run(version, at, sessionId);
    },
    setVerdict(u: VerdictUpdate): void {
      q.verdict.run(u);
    },
    /** Counts a flag (ok -> stalling or looping) and keeps the worst verdict seen. */
    flag(sessionId: string, was: Verdict, verdict: Verdict, flagged: boolean, now: number): void {
      q.flags.run({ session_id: sessionId, worst: worse(was, verdict), flag: flagged ? 1 : 0, now });
    },
    /** The reporter's spend numbers; an older report than the stored one changes nothing. */
    setStats(u: StatsUpdate): void {
      const { top, ...rest } = u;
      q.stats.run({
        ...rest,
        has_top: top ? 1 : 0,
        top_target: top?.target ?? null,
        top_target_count: top?.count ?? 0,
      });
    },
    /** What opencode shows of the session (a heartbeat's title, folder and creation time). */
    describe(d: SessionDescription): void {
      if (d.title === null && d.directory === null && d.created_at === null) return;
      q.describe.run(d);
    },
    touch(sessionId: string, at: number): void {
      q.touch.run(at, sessionId);
    },
    /** A resumed tree (or session) no longer shows the hard stop's stage. */
    clearStopped(scope: "tree" | "session", key: string): void {
      (scope === "tree" ? q.clearTreeStage : q.clearStage).run(key);
    },
    prune(cutoff: number): number {
      return q.prune.run({ cutoff }).changes;
    },
  };
}

/** What the admin page, the API and /metrics read. */
function sessionReads(q: Statements) {
  return {
    get(sessionId: string): SessionRow | undefined {
      return q.get.get(sessionId);
    },
    rootOf(sessionId: string): string {
      return q.get.get(sessionId)?.root_id ?? sessionId;
    },
    list(limit: number): SessionListRow[] {
      return q.list.all(limit);
    },
    /** Flagged, refused or marked sessions (see ATTENTION), most recently seen first. */
    attention(limit: number): SessionListRow[] {
      return q.attention.all(limit);
    },
    /** The other sessions, most recently seen first, from `offset`. */
    quiet(limit: number, offset: number): SessionListRow[] {
      return q.quiet.all(limit, offset);
    },
    /** All sessions, and how many of them need attention. */
    counts(): { total: number; attention: number } {
      return q.counts.get() ?? { total: 0, attention: 0 };
    },
    /** Sessions flagged now, looping first, then most recently seen. */
    flagged(limit: number): SessionListRow[] {
      return q.flagged.all(limit);
    },
    /** One session as list() shows it. */
    one(sessionId: string): SessionListRow | undefined {
      return q.one.get(sessionId);
    },
    /** The session's direct children, first seen first. */
    children(sessionId: string, limit = 200): ChildRow[] {
      return q.children.all(sessionId, limit);
    },
    countByVerdict(): Record<Verdict, number> {
      const out: Record<Verdict, number> = { ok: 0, stalling: 0, looping: 0 };
      for (const r of q.byVerdict.all()) out[r.verdict] = r.n;
      return out;
    },
  };
}

export function sessionsTable(db: Database.Database) {
  const q = sessionStatements(db);
  return { ...sessionReads(q), ...sessionWrites(q) };
}
export type SessionsTable = ReturnType<typeof sessionsTable>;
