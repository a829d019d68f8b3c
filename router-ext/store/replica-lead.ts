// One watchdog tick at a time across replicas: a tick runs inside a
// transaction that holds pg_try_advisory_xact_lock(WATCHDOG_LEAD); a replica
// that does not get it skips this tick (another one is ticking), and the lock
// goes with the transaction, so a replica that dies mid-tick frees it. On
// SQLite there is one process and it always leads.
import type { Sql } from "./sql.ts";

/** The advisory lock key of the watchdog tick ("SGWD"). */
export const WATCHDOG_LEAD = 0x53475744;

/**
 * Takes the tick lead for the rest of q's transaction, without waiting.
 * Call it inside `sql.tx` (outside one the lock is let go at once).
 */
export async function tryLeadTick(q: Sql): Promise<boolean> {
  if (q.engine !== "postgres") return true;
  const r = await q.get<{ ok: boolean }>(`SELECT pg_try_advisory_xact_lock(${WATCHDOG_LEAD}) AS ok`);
  return r?.ok === true;
}

/** Runs fn as this replica's tick when it gets the lead; `ran: false` when another replica holds it. */
export async function leadTick<T>(
  sql: Sql,
  fn: (q: Sql) => Promise<T>,
): Promise<{ ran: true; value: T } | { ran: false }> {
  return sql.tx(async (q) =>
    (await tryLeadTick(q)) ? { ran: true as const, value: await fn(q) } : { ran: false as const },
  );
}

/**
 * Whether a tick is due: none stored yet, or the last one is at least half an
 * interval old (replicas' timers drift apart; half keeps one tick an interval).
 * @example
 * tickDue(null, 1000, 60_000) // true
 * tickDue(990_000, 1_000_000, 60_000) // false: 10 s ago, under 30 s
 */
export function tickDue(lastAt: number | null, now: number, everyMs: number): boolean {
  return lastAt === null || now - lastAt >= everyMs / 2;
}
