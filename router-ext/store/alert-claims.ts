// Alert once across replicas. Every replica that sees an incident builds the
// same alert (transitions carry the plugin's `at`, a blind watchdog the tick's
// `at`), so source, state, time and dedup key name the incident; the replica
// whose INSERT ... ON CONFLICT DO NOTHING returns the row sends it, the others
// drop it. Engine-neutral (SQLite 3.35+ and PostgreSQL both return the row).
import type { Alert } from "../notify/types.ts";
import type { Sql } from "./sql.ts";

/**
 * @example
 * alertClaimKey({source: "no-progress", state: "trigger", at: 1700000000000, dedup_key: "ses_root"})
 * // "no-progress|trigger|1700000000000|ses_root"
 */
export function alertClaimKey(a: Pick<Alert, "source" | "state" | "at" | "dedup_key">): string {
  // The dedup key goes last: it is the only free-form part, so keys cannot collide.
  return `${a.source}|${a.state}|${a.at}|${a.dedup_key}`;
}

/** True when this replica won the alert and must send it; false when another replica (or an earlier try) did. */
export async function claimAlert(q: Sql, key: string, replica: string, now: number): Promise<boolean> {
  const row = await q.get<{ key: string }>(
    "INSERT INTO alert_claims (key, replica, claimed_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING RETURNING key",
    [key, replica, now],
  );
  return row !== undefined;
}

/** Forgets claims older than `before` (an incident's alert is not re-sent after that long). Returns how many. */
export async function pruneAlertClaims(q: Sql, before: number): Promise<number> {
  return (await q.run("DELETE FROM alert_claims WHERE claimed_at < ?", [before])).changes;
}
