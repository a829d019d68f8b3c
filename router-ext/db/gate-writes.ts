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
import { emptyGateBatch, type GateBatch, writeGateBatch } from "./gate-batch.ts";
import type { PluginLinkSeen } from "./tables/plugin-links.ts";
import type { WriteQueue } from "./write-queue.ts";
import { errorFrom, type GateBatchJob, type GateBatchReport } from "./writer-jobs.ts";

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
  private batch: GateBatch | null = null;
  /** Session -> the identity last written for it, and when its last-seen times were last written. */
  private readonly written = new Map<string, string>();
  private readonly touched = new Map<string, number>();
  private readonly headersSeenAt = new Map<string, number>();
  /** Plugin instance -> what was last written of it, and when. */
  private readonly linksWritten = new Map<string, { sig: string; at: number }>();

  /** The write queue's dropped count when the memos were last known true. */
  private droppedSeen = 0;

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

  /** Forgets which identities are written (after a prune deleted sessions, or a full queue dropped writes). */
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

  private current(): GateBatch {
    // A full queue dropped writes: maybe this batch (never to be written) and
    // what the memos say is written. Start a new batch and write all again.
    if (this.writes.stats.dropped !== this.droppedSeen) {
      this.droppedSeen = this.writes.stats.dropped;
      this.batch = null;
      this.forget();
    }
    if (this.batch) return this.batch;
    const b = emptyGateBatch();
    this.batch = b;
    /** The batch leaves: later writes start a new one, and what it writes is not queued again soon. */
    const take = () => {
      if (this.batch !== b) return;
      this.batch = null;
      this.remember(b);
    };
    this.writes.defer(
      "gate batch",
      (q) => {
        take();
        b.tries++;
        return writeGateBatch(b, q, (label, err) => this.writes.drop(label, err));
      },
      {
        take: (): GateBatchJob => {
          take();
          b.tries++;
          return { kind: "gate batch", batch: b };
        },
        settle: (out) => {
          for (const d of (out as GateBatchReport).drops) this.writes.drop(d.label, errorFrom(d.error));
        },
      },
    );
    return b;
  }

  /**
   * Notes what a batch writes as it leaves (a retry writes the same), so the
   * same identity, link or last-seen time is not queued again soon; an item
   * the database then drops for its own reason would fail again anyway.
   */
  private remember(b: GateBatch): void {
    for (const { identity, sessionId, key, at } of b.identities.values()) {
      remember(this.written, sessionId, key);
      if (identity.pluginVersion) remember(this.headersSeenAt, sessionId, at);
    }
    for (const [sessionId, p] of b.plugins) remember(this.headersSeenAt, sessionId, p.at);
    for (const [instanceId, l] of b.links) remember(this.linksWritten, instanceId, { sig: l.sig, at: l.at });
    for (const [sessionId, at] of b.touches) remember(this.touched, sessionId, at);
  }

  /** Queues the plugin process's link unless the same was written less than ten seconds ago. */
  private linkSeen(b: GateBatch, version: string, link: PluginLinkHeaders, now: number): void {
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
}

/** Sets a bounded memo entry (all forgotten at the bound: each then written once more). */
function remember<T>(memo: Map<string, T>, key: string, value: T): void {
  if (memo.size >= WRITTEN_MAX) memo.clear();
  memo.set(key, value);
}
