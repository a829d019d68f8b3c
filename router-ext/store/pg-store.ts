// The store on PostgreSQL, for replicas: the same repositories and rules as
// SQLite (SqlStore) over the PostgreSQL engine of Sql, the database opened and
// migrated by pg-open.ts, and each replica's gate facts kept current with the
// others' changes: a transaction that stops or resumes a tree or sets a cap
// notifies on commit (pg-notify.ts), and every replica that hears it (the
// writer too, harmlessly) reads its facts again (coalescedReload), so a Stop
// through one replica is enforced by all of them within the notify latency
// (milliseconds) plus one reload.

import type { GateFactChange } from "../gate/facts.ts";
import { coalescedReload } from "./coalesced-reload.ts";
import { type ChangeFeed, notifyChange, RELOAD, startChangeFeed } from "./pg-notify.ts";
import { openPgDatabase } from "./pg-open.ts";
import type { PgSql } from "./pg-sql.ts";
import { showPgTarget } from "./pg-target.ts";
import { leadTick, tickDue } from "./replica-lead.ts";
import type { Sql } from "./sql.ts";
import { SqlStore, type SqlStoreOptions } from "./sql-store.ts";

/** Whether the server takes writes: up, not a standby, not read-only. Never throws. */
async function pgWritable(sql: PgSql): Promise<boolean> {
  try {
    const r = await sql.get<{ ok: boolean }>(
      "SELECT (NOT pg_is_in_recovery()) AND current_setting('transaction_read_only') = 'off' AS ok",
    );
    return r?.ok === true;
  } catch {
    return false;
  }
}

/** The changes other replicas must hear of: refusals and caps (a session's root each replica learns itself). */
async function tellReplicas(q: Sql, changes: readonly GateFactChange[]): Promise<void> {
  const kinds = new Set(changes.map((c) => c.kind).filter((k) => k === "refusal" || k === "cap"));
  for (const kind of kinds) await notifyChange(q, kind === "refusal" ? "refusals" : "caps");
}

export class PgStore extends SqlStore {
  private feed: ChangeFeed | null = null;
  private knobsChanged: (() => void) | null = null;
  private breakerChanged: (() => void) | null = null;

  readonly replica: string;
  private readonly log: ((line: string) => void) | undefined;
  private readonly clock: () => number;

  constructor(
    readonly pg: PgSql,
    readonly shown: string,
    opts: Omit<SqlStoreOptions, "writable" | "close" | "beforeCommit">,
  ) {
    super(pg, {
      ...opts,
      writable: () => pgWritable(pg),
      close: async () => {
        await this.feed?.close();
        await pg.close();
      },
      beforeCommit: tellReplicas,
    });
    this.replica = opts.replica ?? "local";
    this.clock = opts.now ?? Date.now;
    this.log = opts.log;
  }

  /** Listens for the other replicas' changes; a reload on each (coalesced), and after a reconnect. */
  async follow(
    feed: (onChange: (kind: string) => void) => Promise<ChangeFeed>,
    log: (line: string) => void,
  ): Promise<void> {
    const reloads = coalescedReload(() => this.reloadFacts(), log);
    this.feed = await feed((kind) => {
      if (kind === "knobs" || kind === RELOAD) this.knobsChanged?.();
      if (kind === "breaker" || kind === RELOAD) this.breakerChanged?.();
      if (kind !== "knobs" && kind !== "breaker") reloads.signal();
    });
  }

  /** Called when another replica changed a knob (and after a reconnect): serve syncs its live config. */
  onKnobsChanged(fn: () => void): void {
    this.knobsChanged = fn;
  }

  /** Called when another replica changed a breaker state (and after a reconnect): serve reloads the breaker. */
  onBreakerChanged(fn: () => void): void {
    this.breakerChanged = fn;
  }

  /** Tells the other replicas, inside the writer's transaction, that a breaker state changed. */
  readonly tellBreakerChanged = (q: Sql): Promise<void> => notifyChange(q, "breaker");

  // A knob is one row written on its own: the others are told once it committed.
  override async setKnobOverride(path: string, value: unknown, by: string, at: number): Promise<void> {
    await super.setKnobOverride(path, value, by, at);
    await notifyChange(this.pg, "knobs");
  }

  override async deleteKnobOverride(path: string): Promise<boolean> {
    const gone = await super.deleteKnobOverride(path);
    await notifyChange(this.pg, "knobs");
    return gone;
  }

  /**
   * Runs a watchdog tick when this replica leads: it holds the tick lock and
   * no replica stored a tick within the last half interval (so N replicas
   * tick once an interval between them, not N times).
   */
  async leadWatchdogTick(tick: () => Promise<void>, everyMs: number): Promise<void> {
    const now = this.clock();
    const r = await leadTick(this.pg, async (q) => {
      const last = await q.get<{ at: number | null }>("SELECT MAX(received_at) AS at FROM watchdog_ticks");
      if (!tickDue(last?.at ?? null, now, everyMs)) return false;
      await tick();
      return true;
    });
    if (!r.ran || !r.value) this.log?.("watchdog: another replica ticked this interval; skipped");
  }
}

/**
 * Opens the PostgreSQL database `url` names (password from the environment),
 * migrates it under the migration lock, reads the gate's facts and starts
 * following the other replicas' changes.
 */
export async function openPgStore(
  url: string,
  env: NodeJS.ProcessEnv,
  opts: Omit<SqlStoreOptions, "writable" | "close" | "beforeCommit"> & { log: (line: string) => void },
): Promise<PgStore> {
  const opened = await openPgDatabase(url, env, opts.log);
  const store = new PgStore(opened.sql, showPgTarget(opened.target), opts);
  try {
    await store.reloadFacts();
    await store.follow(
      (onChange) =>
        startChangeFeed({ target: opened.target, password: opened.password, onChange, log: opts.log }),
      opts.log,
    );
  } catch (err) {
    await store.close();
    throw err;
  }
  return store;
}
