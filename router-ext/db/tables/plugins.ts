// plugin_instances: one row per plugin process, from its heartbeats.
import type Database from "better-sqlite3";
import type { Heartbeat } from "../../../shared/index.ts";

export function pluginsTable(db: Database.Database) {
  const upsert = db.prepare(
    `INSERT INTO plugin_instances (instance_id, plugin_version, sessions, first_seen_at, last_seen_at)
     VALUES (@instance_id, @plugin_version, @sessions, @now, @now)
     ON CONFLICT(instance_id) DO UPDATE SET plugin_version = excluded.plugin_version,
       sessions = excluded.sessions, last_seen_at = excluded.last_seen_at`,
  );
  const live = db.prepare<[number], { n: number }>(
    "SELECT COUNT(*) AS n FROM plugin_instances WHERE last_seen_at >= ?",
  );
  const prune = db.prepare("DELETE FROM plugin_instances WHERE last_seen_at < ?");
  return {
    seen(h: Heartbeat, now: number): void {
      upsert.run({
        instance_id: h.instance_id,
        plugin_version: h.plugin_version,
        sessions: h.sessions.length,
        now,
      });
    },
    liveSince(since: number): number {
      return live.get(since)?.n ?? 0;
    },
    prune(cutoff: number): number {
      return prune.run(cutoff).changes;
    },
  };
}
export type PluginsTable = ReturnType<typeof pluginsTable>;
