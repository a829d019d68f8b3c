// router_runs and router_events: the router's own heartbeat (one row per
// serve run, alive_at moved while it runs, stopped_at on a clean stop) and
// what it finds on start: the time it was down, from the last run's stop (or
// last alive mark, when it ended without stopping) to this start.
import type { Sql } from "../../store/sql.ts";
import { later } from "./later.ts";

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

export function routerRunsTable(sql: Sql) {
  return {
    /** Records this run's start; returns its row id and the outage before it (also stored as an event). */
    async start(
      at: number,
      pid: number,
      version: string,
    ): Promise<{ seq: number; outage: ReturnType<typeof outageBefore> }> {
      const last = await sql.get<RouterRun>(
        "SELECT seq, started_at, alive_at, stopped_at FROM router_runs ORDER BY seq DESC LIMIT 1",
      );
      const outage = outageBefore(last, at);
      if (outage)
        await sql.run(
          "INSERT INTO router_events (kind, from_at, to_at, clean, at) VALUES ('down', ?, ?, ?, ?)",
          [outage.from, outage.to, outage.clean ? 1 : 0, at],
        );
      const row = await sql.get<{ seq: number }>(
        "INSERT INTO router_runs (started_at, alive_at, pid, version) VALUES (?, ?, ?, ?) RETURNING seq",
        [at, at, pid, version.slice(0, 64)],
      );
      return { seq: Number(row?.seq), outage };
    },
    async alive(seq: number, at: number): Promise<void> {
      await sql.run(`UPDATE router_runs SET alive_at = ${later("alive_at", "@at")} WHERE seq = @seq`, {
        at,
        seq,
      });
    },
    async stopped(seq: number, at: number): Promise<void> {
      await sql.run(
        `UPDATE router_runs SET alive_at = ${later("alive_at", "@at")}, stopped_at = @at WHERE seq = @seq`,
        {
          at,
          seq,
        },
      );
    },
    /** The latest outages, newest first. */
    async events(limit: number): Promise<RouterEventView[]> {
      const rows = await sql.all<{ from_at: number; to_at: number; clean: number; at: number }>(
        "SELECT from_at, to_at, clean, at FROM router_events ORDER BY at DESC, seq DESC LIMIT ?",
        [Math.max(1, Math.min(10_000, Math.floor(limit)))],
      );
      return rows.map((r) => ({
        kind: "down",
        from: r.from_at,
        to: r.to_at,
        clean: r.clean === 1,
        at: r.at,
      }));
    },
    async prune(cutoff: number): Promise<number> {
      const runs = await sql.run(
        "DELETE FROM router_runs WHERE alive_at < ? AND seq < (SELECT MAX(seq) FROM router_runs)",
        [cutoff],
      );
      const events = await sql.run("DELETE FROM router_events WHERE at < ?", [cutoff]);
      return runs.changes + events.changes;
    },
  };
}
export type RouterRunsTable = ReturnType<typeof routerRunsTable>;
