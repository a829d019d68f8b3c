// What the router stored, read the way e2e assertions need it: a read-only
// query on its SQLite file, a session's verdict transitions and its last
// landed change, and a poll for a condition (the heartbeat comes every second).
import Database from "better-sqlite3";

export interface RouterDb {
  query<T>(sql: string, ...args: unknown[]): T[];
  transitions(id: string): Array<{ verdict: string; source: string; reason: string | null }>;
  lastLanded(id: string): number | null;
}

/** Reads the router's database at dbPath() (a function: a restarted router may move it). */
export function routerDb(dbPath: () => string): RouterDb {
  const query = <T>(sql: string, ...args: unknown[]): T[] => {
    const ro = new Database(dbPath(), { readonly: true });
    try {
      return ro.prepare(sql).all(...args) as T[];
    } finally {
      ro.close();
    }
  };
  return {
    query,
    transitions: (id) =>
      query("SELECT verdict, source, reason FROM transitions WHERE session_id = ? ORDER BY at", id),
    lastLanded: (id) =>
      query<{ last_landed_at: number | null }>(
        "SELECT last_landed_at FROM sessions WHERE session_id = ?",
        id,
      )[0]?.last_landed_at ?? null,
  };
}

/** Polls until pred holds, or throws naming what it waited for. */
export async function until(pred: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
