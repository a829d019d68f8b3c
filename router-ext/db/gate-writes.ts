// What the gate writes to SQLite, all of it off the request path: the
// identity a request taught (session, parent, agent, plugin version), the
// refusal counted once per session and refusal, the request record and the
// session's last-seen time. They gather in one batch, handed to the write
// queue as a single write (one transaction); a repeated identity or touch
// within a batch is written once, with its latest time.
import type { RefusalScope } from "../api/schemas.ts";
import type { GateIdentity, RequestRecord } from "../gate/store.ts";
import type { ModesStore } from "../modes/store.ts";
import type { Tables } from "./open-tables.ts";
import { isUnavailable, type WriteQueue } from "./write-queue.ts";

interface Batch {
  identities: Map<string, { identity: GateIdentity; sessionId: string; at: number }>;
  refusals: Array<{ sessionId: string; scope: RefusalScope; refusedAt: number; at: number }>;
  records: RequestRecord[];
  /** Session -> latest request start. */
  touches: Map<string, number>;
}

export class GateWrites {
  private batch: Batch | null = null;

  constructor(
    private readonly t: Tables,
    private readonly modes: ModesStore,
    private readonly writes: WriteQueue,
  ) {}

  /** Files the session under its parent's tree and notes the plugin that sent it. */
  learn(identity: GateIdentity, sessionId: string, now: number): void {
    const key = `${sessionId}\u0000${identity.parent}\u0000${identity.agent}\u0000${identity.pluginVersion}`;
    const b = this.current();
    const seen = b.identities.get(key);
    if (seen) seen.at = Math.max(seen.at, now);
    else b.identities.set(key, { identity, sessionId, at: now });
  }

  /** One refused request (the refusal counts once per session, its requests each). */
  countRefusal(sessionId: string, scope: RefusalScope, refusedAt: number, now: number): void {
    this.current().refusals.push({ sessionId, scope, refusedAt, at: now });
  }

  /** The request's record (counts, money, timings; never a body). */
  record(r: RequestRecord): void {
    const b = this.current();
    b.records.push(r);
    if (r.session_id !== null)
      b.touches.set(r.session_id, Math.max(b.touches.get(r.session_id) ?? 0, r.started_at));
  }

  private current(): Batch {
    if (this.batch) return this.batch;
    const b: Batch = { identities: new Map(), refusals: [], records: [], touches: new Map() };
    this.batch = b;
    this.writes.defer("gate batch", () => {
      if (this.batch === b) this.batch = null;
      this.write(b);
    });
    return b;
  }

  /** Runs inside the queue's transaction; a write the database refuses rolls the batch back for a retry. */
  private write(b: Batch): void {
    const t = this.t;
    for (const { identity, sessionId, at } of b.identities.values())
      this.each("gate identity", () => {
        const parent = identity.parent && identity.parent.length <= 200 ? identity.parent : null;
        const agent = identity.agent ? identity.agent.slice(0, 64) : null;
        t.sessions.learn(
          { session_id: sessionId, parent_id: parent, root_id: null, agent, source: "gate" },
          at,
        );
        if (identity.pluginVersion) t.sessions.pluginSeen(sessionId, identity.pluginVersion.slice(0, 64), at);
      });
    for (const r of b.refusals)
      this.each("refusal count", () => this.modes.countRefusal(r.sessionId, r.scope, r.refusedAt, r.at));
    for (const r of b.records)
      this.each("request record", () => {
        t.requests.insert(r);
        if (r.refused) t.counters.bump("refusals_total");
      });
    for (const [sessionId, at] of b.touches)
      this.each("session touch", () => t.sessions.touch(sessionId, at));
  }

  /** One item of the batch: a bad one is dropped (counted, logged once), the rest still go. */
  private each(label: string, write: () => void): void {
    try {
      write();
    } catch (err) {
      if (isUnavailable(err)) throw err;
      this.writes.drop(label, err);
    }
  }
}
