// router_runs and router_events: the router's own heartbeat (one row per
// serve run, alive_at moved while it runs, stopped_at on a clean stop) and
// what it finds on start: the time it was down, from the last run's stop (or
// last alive mark, when it ended without stopping) to this start.
import type Database from "better-sqlite3";

export interface RouterRun {
  seq: number;
  started_at: number;
  alive_at: number;
  stopped_at: number | null;
}

/** One outage as the readout shows it. clean: the last run stopped itself (not a crash, kill or power loss). */
export interface RouterEventView {
  kind: "down";
  from: number;
  to: number;
  clean: boolean;
  at: number;
}

/** The outage between the last run and a start at `startedAt`; null for a first start or no gap. */
export function outageBefore(
  last: RouterRun | undefined,
  startedAt: number,
): Omit<RouterEventView, "kind" | "at"> | null {
  if (!last) return null;
  const from = last.stopped_at ?? last.alive_at;
  return startedAt > from ? { from, to: startedAt, clean: last.stopped_at !== null } : null;
}

export function routerRunsTable(db: Database.Database) {
  const q = {
    last: db.prepare<[], RouterRun>(
      "SELECT seq, started_at, alive_at, stopped_at FROM router_runs ORDER BY seq DESC LIMIT 1",
    ),
    insert: db.prepare("INSERT INTO router_runs (started_at, alive_at, pid, version) VALUES (?, ?, ?, ?)"),
    alive: db.prepare("UPDATE router_runs SET alive_at = MAX(alive_at, ?) WHERE seq = ?"),
    stopped: db.prepare("UPDATE router_runs SET alive_at = MAX(alive_at, ?), stopped_at = ? WHERE seq = ?"),
    event: db.prepare(
      "INSERT INTO router_events (kind, from_at, to_at, clean, at) VALUES ('down', ?, ?, ?, ?)",
    ),
    events: db.prepare<[number], { from_at: number; to_at: number; clean: number; at: number }>(
      "SELECT from_at, to_at, clean, at FROM router_events ORDER BY at DESC, seq DESC LIMIT ?",
    ),
    pruneRuns: db.prepare(
      "DELETE FROM router_runs WHERE alive_at < ? AND seq < (SELECT MAX(seq) FROM router_runs)",
    ),
    pruneEvents: db.prepare("DELETE FROM router_events WHERE at < ?"),
  };
  return {
    /** Records this run's start; returns its row id and the outage before it (also stored as an event). */
    start(
      at: number,
      pid: number,
      version: string,
    ): { seq: number; outage: ReturnType<typeof outageBefore> } {
      const outage = outageBefore(q.last.get(), at);
      if (outage) q.event.run(outage.from, outage.to, outage.clean ? 1 : 0, at);
      const seq = Number(q.insert.run(at, at, pid, version.slice(0, 64)).lastInsertRowid);
      return { seq, outage };
    },
    alive(seq: number, at: number): void {
      q.alive.run(at, seq);
    },
    stopped(seq: number, at: number): void {
      q.stopped.run(at, at, seq);
    },
    /** The latest outages, newest first. */
    events(limit: number): RouterEventView[] {
      return q.events.all(Math.max(1, Math.min(10_000, Math.floor(limit)))).map((r) => ({
        kind: "down",
        from: r.from_at,
        to: r.to_at,
        clean: r.clean === 1,
        at: r.at,
      }));
    },
    prune(cutoff: number): number {
      return q.pruneRuns.run(cutoff).changes + q.pruneEvents.run(cutoff).changes;
    },
  };
}
export type RouterRunsTable = ReturnType<typeof routerRunsTable>;
