// What the gate writes to the store, all of it off the request path: the
// identity a request taught (session, parent, agent, plugin version), the
// plugin process its headers name (instance, report URL, delivery state), the
// refusal counted once per session and refusal, the request record and the
// session's last-seen time. They gather in one batch, handed to the write
// queue as a single write (one transaction); a repeated identity or touch
// within a batch is written once, with its latest time. An identity already
// written in an earlier batch is not learnt again, and a session's last-seen
// times move at most once a second (last_seen_at) and once in ten seconds
// (plugin_headers_at and a plugin link's last_at, read against heartbeat
// periods; a link whose URL or state changed is written in the next batch):
// each such write updates a row and an index, which cost a busy gate more
// than the request's own record.
import type { RefusalScope } from "../api/schemas.ts";
import type { GateIdentity, PluginLinkHeaders, RequestRecord } from "../gate/types.ts";
import { ModesStore } from "../modes/store.ts";
import type { Sql } from "../store/sql.ts";
import { openTables, type Tables } from "./open-tables.ts";
import type { PluginLinkSeen } from "./tables/plugin-links.ts";
import { isUnavailable, type WriteQueue } from "./write-queue.ts";

interface Batch {
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

/** At most this many sessions are remembered as written (then all are written once more). */
const WRITTEN_MAX = 100_000;
/**
 * Records that make a batch full: written then, not at the write queue's next
 * gap (50 ms). About 0.7 ms of CPU on the event loop, as one batch of a gate
 * at 3,000 requests/s took with the 10 ms gap before; a gate at 1,000 commits
 * a third as often as it did then.
 */
const FULL_BATCH = 32;
const TOUCH_EVERY_MS = 1000;
const HEADERS_SEEN_EVERY_MS = 10_000;

export class GateWrites {
  private batch: Batch | null = null;
  /** Session -> the identity last written for it, and when its last-seen times were last written. */
  private readonly written = new Map<string, string>();
  private readonly touched = new Map<string, number>();
  private readonly headersSeenAt = new Map<string, number>();
  /** Plugin instance -> what was last written of it, and when. */
  private readonly linksWritten = new Map<string, { sig: string; at: number }>();

  constructor(private readonly writes: WriteQueue) {}

  /** Files the session under its parent's tree and notes the plugin (and plugin process) that sent it. */
  learn(identity: GateIdentity, sessionId: string, now: number): void {
    const key = `${sessionId}\u0000${identity.parent}\u0000${identity.agent}\u0000${identity.pluginVersion}`;
    const b = this.current();
    if (identity.pluginVersion && identity.link) this.linkSeen(b, identity.pluginVersion, identity.link, now);
    if (this.written.get(sessionId) === key) {
      if (identity.pluginVersion && now - (this.headersSeenAt.get(sessionId) ?? 0) >= HEADERS_SEEN_EVERY_MS) {
        const p = b.plugins.get(sessionId);
        b.plugins.set(sessionId, { version: identity.pluginVersion, at: Math.max(p?.at ?? 0, now) });
      }
      return;
    }
    const seen = b.identities.get(key);
    if (seen) seen.at = Math.max(seen.at, now);
    else b.identities.set(key, { identity, sessionId, key, at: now });
  }

  /** Forgets which identities are written (after a prune deleted sessions). */
  forget(): void {
    this.written.clear();
    this.touched.clear();
    this.headersSeenAt.clear();
    this.linksWritten.clear();
  }

  /** One refused request (the refusal counts once per session, its requests each). */
  countRefusal(sessionId: string, scope: RefusalScope, refusedAt: number, now: number): void {
    this.current().refusals.push({ sessionId, scope, refusedAt, at: now });
  }

  /** The request's record (counts, money, timings; never a body). */
  record(r: RequestRecord): void {
    const b = this.current();
    b.records.push(r);
    if (b.records.length === FULL_BATCH) this.writes.hurry();
    const s = r.session_id;
    if (s !== null && r.started_at - (this.touched.get(s) ?? Number.NEGATIVE_INFINITY) >= TOUCH_EVERY_MS)
      b.touches.set(s, Math.max(b.touches.get(s) ?? 0, r.started_at));
  }

  private current(): Batch {
    if (this.batch) return this.batch;
    const b: Batch = {
      identities: new Map(),
      plugins: new Map(),
      links: new Map(),
      refusals: [],
      records: [],
      touches: new Map(),
    };
    this.batch = b;
    this.writes.defer("gate batch", (q) => {
      if (this.batch === b) this.batch = null;
      return this.write(b, q);
    });
    return b;
  }

  /**
   * Runs inside the queue's transaction, on tables the facts do not observe
   * (they learnt all this first); a write the database refuses rolls the
   * batch back for a retry.
   */
  private async write(b: Batch, q: Sql): Promise<void> {
    const t = openTables(q);
    const modes = new ModesStore(t);
    for (const { identity, sessionId, key, at } of b.identities.values())
      await this.each("gate identity", async () => {
        const parent = identity.parent && identity.parent.length <= 200 ? identity.parent : null;
        const agent = identity.agent ? identity.agent.slice(0, 64) : null;
        await t.sessions.learn(
          { session_id: sessionId, parent_id: parent, root_id: null, agent, source: "gate" },
          at,
        );
        if (identity.pluginVersion) await this.headersSeen(t, sessionId, identity.pluginVersion, at);
        remember(this.written, sessionId, key);
      });
    for (const [sessionId, p] of b.plugins)
      await this.each("plugin headers seen", () => this.headersSeen(t, sessionId, p.version, p.at));
    for (const [instanceId, l] of b.links)
      await this.each("plugin link", async () => {
        await t.pluginLinks.seen(l.seen, l.at);
        remember(this.linksWritten, instanceId, { sig: l.sig, at: l.at });
      });
    for (const r of b.refusals)
      await this.each("refusal count", () => modes.countRefusal(r.sessionId, r.scope, r.refusedAt, r.at));
    for (const r of b.records)
      await this.each("request record", async () => {
        await t.requests.insert(r);
        if (r.refused) await t.counters.bump("refusals_total");
      });
    for (const [sessionId, at] of b.touches)
      await this.each("session touch", async () => {
        await t.sessions.touch(sessionId, at);
        remember(this.touched, sessionId, at);
      });
  }

  /** Headers say a plugin is loaded, not that it reports (plugin_seen_at comes from /progress). */
  private async headersSeen(t: Tables, sessionId: string, version: string, at: number): Promise<void> {
    await t.sessions.headersSeen(sessionId, version.slice(0, 64), at);
    remember(this.headersSeenAt, sessionId, at);
  }

  /** Queues the plugin process's link unless the same was written less than ten seconds ago. */
  private linkSeen(b: Batch, version: string, link: PluginLinkHeaders, now: number): void {
    const seen: PluginLinkSeen = {
      instance_id: link.instanceId,
      plugin_version: version.slice(0, 64),
      report_url: link.reportTo,
      report_state: link.state,
    };
    const sig = `${seen.plugin_version}\u0000${seen.report_url}\u0000${seen.report_state}`;
    const last = this.linksWritten.get(link.instanceId);
    if (last && last.sig === sig && now - last.at < HEADERS_SEEN_EVERY_MS) return;
    const queued = b.links.get(link.instanceId);
    b.links.set(link.instanceId, { seen, sig, at: Math.max(queued?.at ?? 0, now) });
  }

  /** One item of the batch: a bad one is dropped (counted, logged once), the rest still go. */
  private async each(label: string, write: () => Promise<unknown>): Promise<void> {
    try {
      await write();
    } catch (err) {
      if (isUnavailable(err)) throw err;
      this.writes.drop(label, err);
    }
  }
}

/** Sets a bounded memo entry (all forgotten at the bound: each then written once more). */
function remember<T>(memo: Map<string, T>, key: string, value: T): void {
  if (memo.size >= WRITTEN_MAX) memo.clear();
  memo.set(key, value);
}
