// plugin_instances: one row per plugin process, from its heartbeats.
import type { Heartbeat } from "../../../shared/index.ts";
import type { Sql } from "../../store/sql.ts";

export function pluginsTable(sql: Sql) {
  return {
    async seen(h: Heartbeat, now: number): Promise<void> {
      await sql.run(
        `INSERT INTO plugin_instances (instance_id, plugin_version, sessions, first_seen_at, last_seen_at)
         VALUES (@instance_id, @plugin_version, @sessions, @now, @now)
         ON CONFLICT(instance_id) DO UPDATE SET plugin_version = excluded.plugin_version,
           sessions = excluded.sessions, last_seen_at = excluded.last_seen_at`,
        { instance_id: h.instance_id, plugin_version: h.plugin_version, sessions: h.sessions.length, now },
      );
    },
    async liveSince(since: number): Promise<number> {
      const r = await sql.get<{ n: number }>(
        "SELECT COUNT(*) AS n FROM plugin_instances WHERE last_seen_at >= ?",
        [since],
      );
      return r?.n ?? 0;
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM plugin_instances WHERE last_seen_at < ?", [cutoff])).changes;
    },
  };
}
export type PluginsTable = ReturnType<typeof pluginsTable>;
