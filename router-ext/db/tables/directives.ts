// mode_directives: what the modes asked a plugin to do (compact, recover),
// kept until the plugin acknowledges it, so it survives a router restart.
import type { Directive } from "../../../shared/index.ts";
import type { DirectiveView } from "../../api/session-detail.ts";
import type { Sql } from "../../store/sql.ts";

export interface DirectiveRow {
  id: string;
  action: "compact" | "recover";
  session_id: string;
  root_id: string;
  report: string;
  created_at: number;
  sent_count: number;
  last_sent_at: number | null;
  done_at: number | null;
}

export function directivesTable(sql: Sql) {
  return {
    async insert(d: Directive, now: number): Promise<void> {
      const report = d.report.slice(0, 4000);
      await sql.run(
        `INSERT INTO mode_directives (id, action, session_id, root_id, report, created_at)
         VALUES (@id, @action, @session_id, @root_id, @report, @now) ON CONFLICT(id) DO NOTHING`,
        { id: d.id, action: d.action, session_id: d.session_id, root_id: d.root_id, report, now },
      );
    },
    /** Unanswered directives created at or after `since`, oldest first. */
    open(since: number): Promise<DirectiveRow[]> {
      return sql.all(
        "SELECT * FROM mode_directives WHERE done_at IS NULL AND created_at >= ? ORDER BY created_at",
        [since],
      );
    },
    get(id: string): Promise<DirectiveRow | undefined> {
      return sql.get("SELECT * FROM mode_directives WHERE id = ?", [id]);
    },
    async markSent(id: string, at: number): Promise<void> {
      await sql.run("UPDATE mode_directives SET sent_count = sent_count + 1, last_sent_at = ? WHERE id = ?", [
        at,
        id,
      ]);
    },
    async markDone(id: string, at: number, ok: boolean, error: string | null): Promise<void> {
      await sql.run(
        "UPDATE mode_directives SET done_at = @at, ok = @ok, error = @error WHERE id = @id AND done_at IS NULL",
        { id, at, ok: ok ? 1 : 0, error },
      );
    },
    /** Closes a tree's open directives (hard stop, Resume): nothing re-sends them. */
    async closeTree(rootId: string, at: number, why: string): Promise<void> {
      await sql.run(
        "UPDATE mode_directives SET done_at = ?, ok = 0, error = ? WHERE root_id = ? AND done_at IS NULL",
        [at, why, rootId],
      );
    },
    /** A tree's directives (the latest `limit`), oldest first, with their outcome. */
    async forTree(rootId: string, limit: number): Promise<DirectiveView[]> {
      const rows = await sql.all<Omit<DirectiveView, "ok"> & { ok: number | null }>(
        `SELECT * FROM (SELECT action, session_id, created_at, done_at, ok, error FROM mode_directives
           WHERE root_id = ? ORDER BY created_at DESC LIMIT ?) AS latest ORDER BY created_at`,
        [rootId, limit],
      );
      return rows.map((r) => ({ ...r, ok: r.ok === null ? null : r.ok === 1 }));
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM mode_directives WHERE created_at < ?", [cutoff])).changes;
    },
  };
}
export type DirectivesTable = ReturnType<typeof directivesTable>;
