// The replica feed: a write that changes what the gate or the modes decide
// (a refusal, a mark, a knob, a cap) calls notifyChange inside its transaction,
// so PostgreSQL delivers the notification on commit only (never for a rollback).
// Each replica keeps ONE dedicated connection LISTENing and calls back with the
// kind of change; when that connection drops it reconnects with backoff and
// then calls back with "reload", since notifications sent while it was away
// are lost. On SQLite (one process) there is nothing to tell.
import type { Client, Notification } from "pg";
import { loadPg, pgConnection } from "./pg-sql.ts";
import type { PgTarget } from "./pg-target.ts";
import type { Sql } from "./sql.ts";

export const CHANGES_CHANNEL = "stallguard_changes";

/** The signal after a reconnect, or for a payload this replica cannot read: reload everything. */
export const RELOAD = "reload";

const KIND = /^[a-z][a-z_]{0,39}$/;

/** Tells every replica, on commit of q's transaction, that `kind` changed (e.g. "refusals"). */
export async function notifyChange(q: Sql, kind: string): Promise<void> {
  if (!KIND.test(kind)) throw new Error(`bad change kind ${JSON.stringify(kind)}`);
  if (q.engine !== "postgres") return;
  await q.get("SELECT pg_notify(?, ?)", [CHANGES_CHANNEL, kind]);
}

/** A notification's payload as a kind; anything unexpected means reload. */
export function changeKind(n: Pick<Notification, "channel" | "payload">): string | null {
  if (n.channel !== CHANGES_CHANNEL) return null;
  return n.payload && KIND.test(n.payload) ? n.payload : RELOAD;
}

export interface ChangeFeedOptions {
  target: PgTarget;
  password?: string;
  onChange: (kind: string) => void;
  log?: (line: string) => void;
  /** Reconnect delays: first, doubling up to max (100 ms, 5 s). */
  backoff?: { firstMs: number; maxMs: number };
}

export interface ChangeFeed {
  /** The LISTEN connection is up. */
  connected(): boolean;
  /** Reconnects after a drop so far. */
  reconnects(): number;
  close(): Promise<void>;
}

/** Connects and LISTENs (rejects when the first connection fails); from then on it reconnects by itself. */
export async function startChangeFeed(o: ChangeFeedOptions): Promise<ChangeFeed> {
  const pg = await loadPg();
  const log = o.log ?? (() => {});
  const backoff = o.backoff ?? { firstMs: 100, maxMs: 5000 };
  let client: Client | undefined;
  let closed = false;
  let attempt = 0;
  let reconnects = 0;
  let timer: NodeJS.Timeout | undefined;

  const listen = async (): Promise<void> => {
    const c = new pg.Client({ ...pgConnection(o.target, o.password), keepAlive: true });
    c.on("error", (err) => lost(c, err));
    c.on("end", () => lost(c));
    c.on("notification", (n) => {
      const kind = changeKind(n);
      if (kind && c === client) o.onChange(kind);
    });
    try {
      await c.connect();
      await c.query(`LISTEN ${CHANGES_CHANNEL}`);
    } catch (err) {
      c.end().catch(() => {});
      throw err;
    }
    if (closed) await c.end().catch(() => {});
    else client = c;
  };

  const retry = () => {
    const delay = Math.min(backoff.maxMs, backoff.firstMs * 2 ** attempt);
    attempt++;
    timer = setTimeout(() => {
      listen().then(
        () => {
          if (closed) return;
          attempt = 0;
          reconnects++;
          log("replica feed: reconnected; reloading");
          o.onChange(RELOAD);
        },
        () => {
          if (!closed) retry();
        },
      );
    }, delay);
    timer.unref();
  };

  function lost(c: Client, err?: Error): void {
    if (c !== client || closed) return;
    client = undefined;
    c.end().catch(() => {});
    log(`replica feed: connection lost (${err?.message ?? "closed by the server"}); reconnecting`);
    retry();
  }

  await listen();
  return {
    connected: () => client !== undefined,
    reconnects: () => reconnects,
    close: async () => {
      closed = true;
      if (timer) clearTimeout(timer);
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    },
  };
}
