// mode_directives: what the modes asked a plugin to do (compact, recover),
// kept until the plugin acknowledges it, so it survives a router restart.
import type Database from "better-sqlite3";
import type { Directive } from "../../../shared/index.ts";

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

import type { DirectiveView } from "../../api/session-detail.ts";

export function directivesTable(db: Database.Database) {
  const q = {
    insert: db.prepare(
      `INSERT INTO mode_directives (id, action, session_id, root_id, report, created_at)
       VALUES (@id, @action, @session_id, @root_id, @report, @now) ON CONFLICT(id) DO NOTHING`,
    ),
    open: db.prepare<[number], DirectiveRow>(
      "SELECT * FROM mode_directives WHERE done_at IS NULL AND created_at >= ? ORDER BY created_at",
    ),
    get: db.prepare<[string], DirectiveRow>("SELECT * FROM mode_directives WHERE id = ?"),
    sent: db.prepare("UPDATE mode_directives SET sent_count = sent_count + 1, last_sent_at = ? WHERE id = ?"),
    done: db.prepare(
      "UPDATE mode_directives SET done_at = @at, ok = @ok, error = @error WHERE id = @id AND done_at IS NULL",
    ),
    closeTree: db.prepare(
      "UPDATE mode_directives SET done_at = ?, ok = 0, error = ? WHERE root_id = ? AND done_at IS NULL",
    ),
    prune: db.prepare("DELETE FROM mode_directives WHERE created_at < ?"),
    forTree: db.prepare<[string, number], Omit<DirectiveView, "ok"> & { ok: number | null }>(
      `SELECT * FROM (SELECT action, session_id, created_at, done_at, ok, error FROM mode_directives
         WHERE root_id = ? ORDER BY created_at DESC LIMIT ?) ORDER BY created_at`,
    ),
  };
  return {
    insert(d: Directive, now: number): void {
      const report = d.report.slice(0, 4000);
      q.insert.run({ id: d.id, action: d.action, session_id: d.session_id, root_id: d.root_id, report, now });
    },
    /** Unanswered directives created at or after `since`, oldest first. */
    open(since: number): DirectiveRow[] {
      return q.open.all(since);
    },
    get(id: string): DirectiveRow | undefined {
      return q.get.get(id);
    },
    markSent(id: string, at: number): void {
      q.sent.run(at, id);
    },
    markDone(id: string, at: number, ok: boolean, error: string | null): void {
      q.done.run({ id, at, ok: ok ? 1 : 0, error });
    },
    /** Closes a tree's open directives (hard stop, Resume): nothing re-sends them. */
    closeTree(rootId: string, at: number, why: string): void {
      q.closeTree.run(at, why, rootId);
    },
    /** A tree's directives (the latest `limit`), oldest first, with their outcome. */
    forTree(rootId: string, limit: number): DirectiveView[] {
      return q.forTree.all(rootId, limit).map((r) => ({ ...r, ok: r.ok === null ? null : r.ok === 1 }));
    },
    prune(cutoff: number): number {
      return q.prune.run(cutoff).changes;
    },
  };
}
export type DirectivesTable = ReturnType<typeof directivesTable>;
