// The notifier: alerts in, per-channel admission (enabled, min_severity,
// resolve_messages, quiet window, rate limit), then a bounded queue with a
// timeout and one retry per delivery. send() only decides and enqueues, so a
// chat request or a /progress call never waits on a channel.
import type { Config } from "../../shared/index.ts";
import { type AdmitSettings, type AdmitState, admitAlert, createAdmitState } from "./admit.ts";
import { desktopChannel } from "./channels/desktop.ts";
import { pagerdutyChannel } from "./channels/pagerduty.ts";
import type { Env } from "./channels/secret-env.ts";
import { webhookChannel } from "./channels/webhook.ts";
import {
  type AttemptResult,
  createDeliveryQueue,
  type DeliveryQueue,
  deliverWithRetry,
  type QueuedJob,
} from "./queue.ts";
import {
  type Alert,
  alertSchema,
  type ChannelAdapter,
  type ChannelCounters,
  type ChannelDiagnostic,
  type ChannelStatus,
  type ChannelType,
  type Delivery,
  type Notifier,
} from "./types.ts";

export type NotificationsConfig = Config["notifications"];

export interface NotifierOptions {
  /** Environment for secrets (`*_env`) and for notify-send (DBUS_SESSION_BUS_ADDRESS, PATH). */
  env: Env;
  /** One line per event worth an operator's eye (failures, startup problems). */
  log: (line: string) => void;
  /** Clock for rate limits, quiet windows and record times. Default Date.now. */
  now?: () => number;
  /** Pause before the one retry. Default 1000 ms (capped at the delivery timeout). */
  retryDelayMs?: number;
  /** Delivery records kept. Default 200. */
  historySize?: number;
  /** Run and log diagnostics at creation. Default true. */
  startupDiagnostics?: boolean;
}

interface Channel {
  name: string;
  type: ChannelType;
  settings: AdmitSettings;
  admit: AdmitState;
  adapter: ChannelAdapter;
  counters: ChannelCounters;
}

const CLOSE_GRACE_MS = 2000;

function adapterFor(c: NotificationsConfig["channels"][number], env: Env): ChannelAdapter {
  if (c.type === "desktop") return desktopChannel(c, env);
  if (c.type === "webhook") return webhookChannel(c, env);
  return pagerdutyChannel(c, env);
}

function testAlert(ch: Channel, at: number): Alert {
  return {
    dedup_key: `stallguard-test-${ch.name}`,
    severity: ch.settings.min_severity,
    state: "trigger",
    title: "stallguard: test alert",
    summary: `Test alert for channel ${ch.name}: if you can read this, the channel works.`,
    details: "",
    source: "test",
    at,
  };
}

function channelFrom(c: NotificationsConfig["channels"][number], env: Env): Channel {
  return {
    name: c.name,
    type: c.type,
    settings: {
      enabled: c.enabled,
      min_severity: c.min_severity,
      resolve_messages: c.resolve_messages,
      lifecycle: c.type === "pagerduty",
      rate_limit: c.rate_limit,
      quiet_window: c.quiet_window,
    },
    admit: createAdmitState(),
    adapter: adapterFor(c, env),
    counters: { sent: 0, failed: 0, filtered: 0, suppressed: 0, rate_limited: 0, queue_dropped: 0 },
  };
}

function channelStatus(ch: Channel): ChannelStatus {
  return {
    name: ch.name,
    type: ch.type,
    enabled: ch.settings.enabled,
    min_severity: ch.settings.min_severity,
    resolve_messages: ch.settings.resolve_messages,
    rate_limit: { count: ch.settings.rate_limit.count, per_ms: ch.settings.rate_limit.per },
    quiet_window_ms: ch.settings.quiet_window,
    target: ch.adapter.target(),
    counters: { ...ch.counters },
  };
}

/** Each channel's own checks; a check that throws is a problem, not a failure of the list. */
function diagnoseChannels(channels: Iterable<Channel>): Promise<ChannelDiagnostic[]> {
  return Promise.all(
    [...channels].map(async (ch) => {
      let problems: string[];
      try {
        problems = await ch.adapter.diagnose();
      } catch (err) {
        problems = [`diagnostics failed: ${(err as Error).message}`];
      }
      return { channel: ch.name, type: ch.type, ok: problems.length === 0, problems };
    }),
  );
}

function logDiagnostics(list: ChannelDiagnostic[], channels: Map<string, Channel>, log: Log): void {
  for (const d of list) {
    const enabled = channels.get(d.channel)?.settings.enabled ? "" : " (disabled)";
    if (d.ok) log(`channel ${d.channel} (${d.type})${enabled}: ready`);
    else for (const p of d.problems) log(`channel ${d.channel} (${d.type})${enabled}: ${p}`);
  }
}

type Log = (line: string) => void;
type RecordDelivery = (ch: Channel, alert: Alert, r: AttemptResult, status?: "dropped") => Delivery;

/** The one place a delivery's outcome is counted, kept (newest first, bounded) and, when it failed, logged. */
function deliveryRecorder(
  history: Delivery[],
  historySize: number,
  now: () => number,
  log: Log,
): RecordDelivery {
  return (ch, alert, r, status) => {
    const d: Delivery = {
      channel: ch.name,
      dedup_key: alert.dedup_key,
      severity: alert.severity,
      state: alert.state,
      title: alert.title,
      source: alert.source,
      status: status ?? (r.ok ? "sent" : "failed"),
      ok: r.ok,
      attempts: r.attempts,
      error: r.error,
      at: now(),
    };
    history.unshift(d);
    if (history.length > historySize) history.length = historySize;
    if (r.ok) ch.counters.sent++;
    else if (status === "dropped") ch.counters.queue_dropped++;
    else ch.counters.failed++;
    if (!r.ok)
      log(
        `channel ${ch.name}: ${alert.state} for ${alert.dedup_key} ${status ?? "failed"} after ${r.attempts} attempt(s): ${r.error}`,
      );
    return d;
  };
}

/** Validates one alert, then admits it per channel and enqueues it; a full queue is a recorded drop. */
function admitAndEnqueue(
  input: unknown,
  channels: Map<string, Channel>,
  queue: DeliveryQueue,
  at: number,
  deps: { record: RecordDelivery; log: Log },
): void {
  const parsed = alertSchema.safeParse(input);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    deps.log(`alert rejected: ${first?.path.join(".") || "(root)"}: ${first?.message ?? "invalid"}`);
    return;
  }
  for (const ch of channels.values()) {
    const a = admitAlert(ch.admit, ch.settings, parsed.data, at);
    if (!a.admit) {
      ch.counters[a.why]++;
      continue;
    }
    if (!queue.push({ channel: ch.name, adapter: ch.adapter, alert: a.alert }))
      deps.record(ch, a.alert, { ok: false, attempts: 0, error: "delivery queue full" }, "dropped");
  }
}

/**
 * Creates the notifier for `config` (the parsed `notifications` section).
 *
 * @example
 * const notifier = createNotifier(config.notifications, { env: process.env, log: console.error });
 * for (const alert of plan.alerts) notifier.send(alert);
 */
export function createNotifier(config: NotificationsConfig, opts: NotifierOptions): Notifier {
  const now = opts.now ?? Date.now;
  const log: Log = (line) => {
    try {
      opts.log(`notify: ${line}`);
    } catch {
      // Logging must never take the notifier down with it.
    }
  };
  const history: Delivery[] = [];
  const record = deliveryRecorder(history, opts.historySize ?? 200, now, log);
  const channels = new Map(config.channels.map((c) => [c.name, channelFrom(c, opts.env)] as const));
  const timeoutMs = config.timeout;
  const retryDelayMs = Math.min(opts.retryDelayMs ?? 1000, timeoutMs);
  const queue = createDeliveryQueue({
    size: config.queue_size,
    timeoutMs,
    retryDelayMs,
    onResult(job: QueuedJob, r) {
      const ch = channels.get(job.channel);
      if (ch) record(ch, job.alert, r);
    },
  });
  let closed = false;
  const diagnostics = () => diagnoseChannels(channels.values());
  if (opts.startupDiagnostics !== false)
    void diagnostics().then((list) => logDiagnostics(list, channels, log));

  return {
    send(input) {
      try {
        if (!closed) admitAndEnqueue(input, channels, queue, now(), { record, log });
      } catch (err) {
        log(`send failed: ${(err as Error).message}`);
      }
    },
    channels: () => [...channels.values()].map(channelStatus),
    setChannel(name, patch) {
      const ch = channels.get(name);
      if (!ch) return null;
      if (patch.enabled !== undefined) ch.settings.enabled = patch.enabled;
      if (patch.min_severity !== undefined) ch.settings.min_severity = patch.min_severity;
      return channelStatus(ch);
    },
    async test(name) {
      const ch = channels.get(name);
      if (!ch) return null;
      const alert = testAlert(ch, now());
      const r = await deliverWithRetry(ch.adapter, alert, { timeoutMs, retryDelayMs });
      return record(ch, alert, r);
    },
    deliveries: (limit) => history.slice(0, Math.max(0, limit ?? history.length)),
    diagnostics,
    idle: () => queue.idle(),
    async close(graceMs = CLOSE_GRACE_MS) {
      closed = true;
      await queue.close(graceMs);
    },
  };
}
