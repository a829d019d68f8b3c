// plugin_links: the plugin processes the gate heard from (their headers on
// model requests), where each reports and whether its last delivery failed;
// joined with plugin_instances (their heartbeats) it tells a plugin that
// reports from one that only sends headers. No content: ids, a URL, a state.
import type { Sql } from "../../store/sql.ts";

export interface PluginLinkSeen {
  instance_id: string;
  plugin_version: string;
  report_url: string | null;
  report_state: string | null;
}

export interface PluginLinkRow extends PluginLinkSeen {
  first_at: number;
  last_at: number;
  /** The instance's last heartbeat, or null when none arrived. */
  reported_at: number | null;
}

export function pluginLinksTable(sql: Sql) {
  return {
    async seen(link: PluginLinkSeen, now: number): Promise<void> {
      await sql.run(
        `INSERT INTO plugin_links (instance_id, plugin_version, report_url, report_state, first_at, last_at)
         VALUES (@instance_id, @plugin_version, @report_url, @report_state, @now, @now)
         ON CONFLICT(instance_id) DO UPDATE SET plugin_version = excluded.plugin_version,
           report_url = excluded.report_url, report_state = excluded.report_state,
           last_at = CASE WHEN plugin_links.last_at > excluded.last_at THEN plugin_links.last_at ELSE excluded.last_at END`,
        { ...link, now },
      );
    },
    /** The plugin processes whose headers the gate saw since `at`, newest first, with their last heartbeat. */
    since(at: number): Promise<PluginLinkRow[]> {
      return sql.all(
        `SELECT l.*, p.last_seen_at AS reported_at FROM plugin_links l
         LEFT JOIN plugin_instances p ON p.instance_id = l.instance_id
         WHERE l.last_at >= ? ORDER BY l.last_at DESC LIMIT 100`,
        [at],
      );
    },
    async prune(cutoff: number): Promise<number> {
      return (await sql.run("DELETE FROM plugin_links WHERE last_at < ?", [cutoff])).changes;
    },
  };
}
export type PluginLinksTable = ReturnType<typeof pluginLinksTable>;

/** One plugin process that sends headers through the gate but whose reports do not arrive. */
export interface HeadersOnlyView {
  instance_id: string;
  version: string;
  report_url: string | null;
  report_state: string | null;
  last_headers_at: number;
}

/**
 * The plugin processes that send headers and do not report: headers within
 * the live window, no heartbeat from the same process within it, and either
 * the plugin says its deliveries fail or its headers have come for longer
 * than one heartbeat period (a reporting plugin sends one on start).
 */
export function headersOnly(
  rows: readonly PluginLinkRow[],
  o: { now: number; liveWindowMs: number; heartbeatMs: number },
): HeadersOnlyView[] {
  const since = o.now - o.liveWindowMs;
  return rows
    .filter(
      (r) =>
        r.last_at >= since &&
        (r.reported_at === null || r.reported_at < since) &&
        (r.report_state === "failing" || o.now - r.first_at > o.heartbeatMs),
    )
    .slice(0, 20)
    .map((r) => ({
      instance_id: r.instance_id,
      version: r.plugin_version,
      report_url: r.report_url,
      report_state: r.report_state,
      last_headers_at: r.last_at,
    }));
}
