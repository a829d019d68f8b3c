// One batch of the gate's writes as a plain value (structured-cloneable, so
// the writer thread can take it), and its write on one transaction.
import type { RefusalScope } from "../api/schemas.ts";
import type { GateIdentity, RequestRecord } from "../gate/types.ts";
import { ModesStore } from "../modes/store.ts";
import type { Sql } from "../store/sql.ts";
import { openTables, type Tables } from "./open-tables.ts";
import type { PluginLinkSeen } from "./tables/plugin-links.ts";
import { isUnavailable } from "./unavailable.ts";

export interface GateBatch {
  /** Times it was handed to a transaction: past the first, an earlier one may have committed. */
  tries: number;
  /** Identity key -> what a session's requests taught. */
  identities: Map<string, { identity: GateIdentity; sessionId: string; key: string; at: number }>;
  /** Sessions whose identity is written: only the time their plugin's headers were seen moves. */
  plugins: Map<string, { version: string; at: number }>;
  /** Plugin instance -> what its headers said last, and when. */
  links: Map<string, { seen: PluginLinkSeen; sig: string; at: number }>;
  refusals: Array<{ sessionId: string; scope: RefusalScope; refusedAt: number; at: number }>;
  records: RequestRecord[];
  /** Session -> latest request start. */
  touches: Map<string, number>;
}

/** An item the database refused for its own reason: dropped, the rest of the batch still goes. */
export type DropItem = (label: string, err: unknown) => void;

export function emptyGateBatch(): GateBatch {
  return {
    tries: 0,
    identities: new Map(),
    plugins: new Map(),
    links: new Map(),
    refusals: [],
    records: [],
    touches: new Map(),
  };
}

/**
 * Writes `b` on `q` (one transaction), on tables the gate's facts do not
 * observe (they learnt all this first). An unavailable database throws, so
 * the whole batch rolls back for a retry; any other failing item is dropped.
 * A batch tried before whose records are there already committed (the
 * writer thread died after its COMMIT, or PostgreSQL's answer to it was
 * lost): its records and refusal counts are not written twice (the rest
 * sets, and setting it again changes nothing).
 */
export async function writeGateBatch(b: GateBatch, q: Sql, drop: DropItem): Promise<void> {
  const t = openTables(q);
  const committed = b.tries > 1 && (await writtenBefore(t, b.records));
  const modes = new ModesStore(t);
  const each = async (label: string, write: () => Promise<unknown>) => {
    try {
      await write();
    } catch (err) {
      if (isUnavailable(err)) throw err;
      drop(label, err);
    }
  };
  const headersSeen = (sessionId: string, version: string, at: number) =>
    t.sessions.headersSeen(sessionId, version.slice(0, 64), at);
  for (const { identity, sessionId, at } of b.identities.values())
    await each("gate identity", async () => {
      await learnIdentity(t, identity, sessionId, at);
      if (identity.pluginVersion) await headersSeen(sessionId, identity.pluginVersion, at);
    });
  for (const [sessionId, p] of b.plugins)
    await each("plugin headers seen", () => headersSeen(sessionId, p.version, p.at));
  for (const l of b.links.values()) await each("plugin link", () => t.pluginLinks.seen(l.seen, l.at));
  for (const r of committed ? [] : b.refusals)
    await each("refusal count", () => modes.countRefusal(r.sessionId, r.scope, r.refusedAt, r.at));
  for (const r of committed ? [] : b.records)
    await each("request record", async () => {
      await t.requests.insert(r);
      if (r.refused) await t.counters.bump("refusals_total");
    });
  for (const [sessionId, at] of b.touches) await each("session touch", () => t.sessions.touch(sessionId, at));
}

/**
 * Whether the batch committed before: its first record with a time is there
 * (a transaction writes all of them or none). Asked on a retry only, so the
 * first write of every batch costs no read.
 */
async function writtenBefore(t: Tables, records: readonly RequestRecord[]): Promise<boolean> {
  const probe = records.find((r) => Number.isFinite(r.started_at));
  return probe !== undefined && (await t.requests.has(probe));
}

/** Files the session under its parent's tree (ids and names capped as the gate caps them). */
function learnIdentity(t: Tables, identity: GateIdentity, sessionId: string, at: number): Promise<unknown> {
  const parent = identity.parent && identity.parent.length <= 200 ? identity.parent : null;
  const agent = identity.agent ? identity.agent.slice(0, 64) : null;
  return t.sessions.learn(
    { session_id: sessionId, parent_id: parent, root_id: null, agent, source: "gate" },
    at,
  );
}
