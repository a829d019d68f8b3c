// One schema per admin API response, shared by the server (its answers are
// typed `satisfies` these) and the admin page (which parses with them, one row
// at a time, so one bad row is reported, not fatal). zod/mini keeps the
// browser bundle small; unknown fields are dropped, never an error.
import * as z from "zod/mini";

const verdict = z.enum(["ok", "stalling", "looping"]);
const source = z.enum(["plugin", "watchdog", "gate"]);

/** The session's stage as the Sessions readout shows it (sessionStage in router-ext/modes/plan.ts decides it). */
export const sessionStages = ["none", "warned", "compacting", "limited", "recovering", "stopped"] as const;
export const sessionStageSchema = z.enum(sessionStages);
export type SessionStage = z.infer<typeof sessionStageSchema>;

export const markKinds = ["false_alarm", "confirmed_loop"] as const;
export const markKindSchema = z.enum(markKinds);
export type MarkKindView = z.infer<typeof markKindSchema>;

/** An admin's mark on a flagged session, with who and when. */
export const markViewSchema = z.object({
  kind: markKindSchema,
  by: z.string(),
  at: z.number(),
  /** The verdict and reason the session showed when it was marked. */
  verdict,
  reason: z.nullable(z.string()),
});
export type MarkView = z.infer<typeof markViewSchema>;

/** One row of GET /api/sessions. Times are epoch milliseconds. */
export const sessionViewSchema = z.object({
  session_id: z.string(),
  parent_id: z.nullable(z.string()),
  root_id: z.string(),
  agent: z.nullable(z.string()),
  verdict,
  worst: verdict,
  flags: z.number(),
  stage: sessionStageSchema,
  plugin_live: z.boolean(),
  /** The gate saw the plugin's headers on its requests within three heartbeats (plugin_live: a report arrived). */
  plugin_headers: z.optional(z.boolean()),
  plugin_version: z.nullable(z.string()),
  turns_since_landed: z.number(),
  usd_since_landed: z.number(),
  context_tokens: z.number(),
  /** The wire's name: the most repeated call (tool and target) in the window. */
  top_target: z.nullable(z.string()),
  top_target_count: z.number(),
  source,
  last_seen_at: z.number(),
  last_landed_at: z.nullable(z.number()),
  reason: z.nullable(z.string()),
  report: z.nullable(z.string()),
  /** Whether the gate refuses it now: its tree or the session itself is stopped. */
  refused: z.boolean(),
  stopped_by: z.nullable(z.string()),
  stopped_at: z.nullable(z.number()),
  /** Where turns and $ since landed come from: the gate's request records, or the reporter's numbers. */
  spend_source: z.enum(["gate", "reporter"]),
  /** Why the configured mode could not act on this session's last verdict change, or null. */
  cannot_act: z.nullable(z.string()),
  /** An admin's "false alarm" or "confirmed loop", or null. */
  mark: z.optional(z.nullable(markViewSchema)),
  /** The reporter's current tool calls and landed changes (null: no plugin sent them). */
  calls: z.optional(z.nullable(z.number())),
  landed: z.optional(z.nullable(z.number())),
  /** What opencode shows the user: the title, the folder (home as ~), when it was created. */
  title: z.optional(z.nullable(z.string())),
  directory: z.optional(z.nullable(z.string())),
  created_at: z.optional(z.nullable(z.number())),
  /**
   * Nothing heard of the session (no heartbeat, request or report) for three
   * heartbeat periods: its opencode is gone, or its plugin stopped tracking it.
   */
  ended: z.optional(z.boolean()),
});
export type SessionView = z.infer<typeof sessionViewSchema>;
export type SessionSource = SessionView["source"];

/** One row of GET /api/events: a stored transition. */
export const eventViewSchema = z.object({
  session_id: z.string(),
  root_id: z.string(),
  verdict,
  previous: verdict,
  reason: z.nullable(z.string()),
  source: z.enum(["plugin", "watchdog"]),
  at: z.number(),
});
export type EventView = z.infer<typeof eventViewSchema>;

/** One row of GET /api/events `router_events`: the router was down from `from` to `to` (found on its start at `at`). */
export const routerEventViewSchema = z.object({
  kind: z.enum(["down"]),
  from: z.number(),
  to: z.number(),
  /** The run before stopped itself; false: it ended without stopping (crash, kill, power loss), `from` is its last alive mark. */
  clean: z.boolean(),
  at: z.number(),
});
export type RouterEventView = z.infer<typeof routerEventViewSchema>;

export const refusalScopeSchema = z.enum(["tree", "session"]);
export type RefusalScope = z.infer<typeof refusalScopeSchema>;
export const refusalStateSchema = z.enum(["stopped", "running"]);
export type RefusalState = z.infer<typeof refusalStateSchema>;

/** A refusal, current (GET /api/trees `trees`) or logged (`log`). */
export const refusalViewSchema = z.object({
  scope: refusalScopeSchema,
  key: z.string(),
  state: refusalStateSchema,
  reason: z.nullable(z.string()),
  by: z.string(),
  at: z.number(),
});
export type RefusalView = z.infer<typeof refusalViewSchema>;

/** The last watchdog tick the router received. */
export const watchdogTickViewSchema = z.object({
  at: z.number(),
  received_at: z.number(),
  servers: z.number(),
  sessions: z.number(),
  flagged: z.number(),
  blind: z.boolean(),
  /** What the tick made of opencode's database; null from watchdogs older than that source. */
  db: z.nullable(z.string()),
});
export type WatchdogTickView = z.infer<typeof watchdogTickViewSchema>;

/** GET /health. */
export const healthSchema = z.object({
  ok: z.boolean(),
  version: z.string(),
  db: z.string(),
  schema_version: z.number(),
  mode: z.string(),
  watchdog: z.nullable(
    z.object({
      last_tick_at: z.number(),
      blind: z.boolean(),
      flagged: z.number(),
      /** opencode servers that answered the tick: blind with 0 is nothing running, not blindness. */
      servers: z.optional(z.number()),
      /** Sessions the tick judged. */
      sessions: z.optional(z.number()),
      /** What the tick made of opencode's database (read, missing, off, unreadable, unexpected_shape). */
      db: z.optional(z.nullable(z.string())),
    }),
  ),
  /** Plugin instances with a heartbeat within three heartbeat intervals. */
  plugins_live: z.optional(z.number()),
  /** Plugin processes whose headers reach the gate but whose reports do not, with the URL each reports to (null: an older plugin). */
  plugins_headers_only: z.optional(
    z.array(
      z.object({
        instance_id: z.string(),
        version: z.string(),
        report_url: z.nullable(z.string()),
        report_state: z.nullable(z.string()),
        last_headers_at: z.number(),
      }),
    ),
  ),
  /** The database accepts a write transaction (a read-only file or a full disk does not). */
  db_writable: z.optional(z.boolean()),
  /** The largest POST /progress body taken; reporters size their batches under it. */
  max_progress_bytes: z.optional(z.number()),
  /** Writes waiting for the database's write lock (another process holds it). */
  pending_writes: z.optional(z.number()),
});
export type Health = z.infer<typeof healthSchema>;

/** One row of GET /api/clients: what a named client key spent in the retention window. */
export const clientUsageSchema = z.object({
  client: z.string(),
  requests: z.number(),
  refused: z.number(),
  failed: z.number(),
  cost_usd: z.number(),
  last_at: z.number(),
});
export type ClientUsageView = z.infer<typeof clientUsageSchema>;
export const clientsResponseSchema = z.object({
  clients: z.array(clientUsageSchema),
  /** The configured key names, so a key that has not been used yet is listed too. */
  configured: z.array(z.string()),
});
export type ClientsResponse = z.infer<typeof clientsResponseSchema>;

export const knobKinds = [
  "number",
  "integer",
  "boolean",
  "enum",
  "duration",
  "string",
  "list",
  "json",
] as const;
export type KnobKind = (typeof knobKinds)[number];

/** One knob of GET /api/knobs. */
export const knobViewSchema = z.object({
  path: z.string(),
  kind: z.enum(knobKinds),
  min: z.optional(z.number()),
  max: z.optional(z.number()),
  options: z.optional(z.array(z.string())),
  nullable: z.optional(z.boolean()),
  description: z.string(),
  value: z.unknown(),
  default: z.unknown(),
  /** Set through the admin API (stored in the database), not from the config files. */
  overridden: z.optional(z.boolean()),
});
export type KnobView = z.infer<typeof knobViewSchema>;

export const excludedKnobSchema = z.object({ path: z.string(), why: z.string() });
export type ExcludedKnob = z.infer<typeof excludedKnobSchema>;

/** GET /api/knobs: the knobs are parsed one by one (knobViewSchema). */
export const knobsResponseSchema = z.object({
  knobs: z.array(z.unknown()),
  excluded: z.array(excludedKnobSchema),
});

const severity = z.enum(["info", "warning", "critical"]);

/** One channel of GET /api/channels: settings and counters, never a secret. */
export const channelViewSchema = z.object({
  name: z.string(),
  type: z.enum(["desktop", "webhook", "pagerduty"]),
  enabled: z.boolean(),
  min_severity: severity,
  resolve_messages: z.boolean(),
  rate_limit: z.object({ count: z.number(), per_ms: z.number() }),
  quiet_window_ms: z.number(),
  /** Where it goes, safe to show: a command name, a URL host, the names of env vars. */
  target: z.string(),
  counters: z.object({
    sent: z.number(),
    failed: z.number(),
    /** Below min_severity, channel disabled, or a resolve the channel does not want. */
    filtered: z.number(),
    /** Non-critical repeats inside the quiet window. */
    suppressed: z.number(),
    rate_limited: z.number(),
    queue_dropped: z.number(),
  }),
  /** What the notifier's diagnostics found wrong (missing D-Bus, unset env); empty when ready. */
  problems: z.array(z.string()),
});
export type ChannelView = z.infer<typeof channelViewSchema>;

/** One row of GET /api/deliveries: a delivery attempt series, or an alert dropped at the queue. */
export const deliverySchema = z.object({
  channel: z.string(),
  dedup_key: z.string(),
  severity,
  state: z.enum(["trigger", "escalate", "resolve"]),
  title: z.string(),
  source: z.enum(["no-progress", "watchdog", "breaker", "test"]),
  /** sent: delivered; failed: every attempt failed; dropped: the queue was full. */
  status: z.enum(["sent", "failed", "dropped"]),
  ok: z.boolean(),
  attempts: z.number(),
  /** Why it failed; never holds a secret or a secret-bearing URL. */
  error: z.nullable(z.string()),
  /** When the outcome was known (ms since the epoch). */
  at: z.number(),
});
export type Delivery = z.infer<typeof deliverySchema>;

const phase = z.enum(["closed", "open", "half_open"]);
const numOrNull = z.nullable(z.number());

/** One model of GET /api/breaker: its breaker state and its rates over the current window. */
export const breakerModelSchema = z.object({
  model: z.string(),
  phase,
  trips: z.number(),
  opened_at: numOrNull,
  until: numOrNull,
  probe_until: numOrNull,
  resumed_by: z.nullable(z.string()),
  resumed_at: numOrNull,
  /** Where requests for this model go while it is open; null: advisory only. */
  fallback: z.nullable(z.string()),
  /** Rates over the current window (null when the model served nothing in it). */
  served_trees: numOrNull,
  stalled_trees: numOrNull,
  rate: numOrNull,
  others_rate: numOrNull,
  ratio: numOrNull,
});
export type BreakerModelView = z.infer<typeof breakerModelSchema>;

/** One recorded trip of GET /api/breaker, with the sessions that made it. */
export const breakerTripSchema = z.object({
  seq: z.number(),
  model: z.string(),
  at: z.number(),
  /** The phase the model was in when it tripped. */
  previous: phase,
  trips: z.number(),
  cooldown_ms: z.number(),
  until: z.number(),
  window_ms: z.number(),
  window_from: z.number(),
  min_sessions: z.number(),
  rate_ratio: z.number(),
  served_trees: z.number(),
  stalled_trees: z.number(),
  rate: z.number(),
  others_served: z.number(),
  others_stalled: z.number(),
  others_rate: z.number(),
  ratio: z.number(),
  /** The model requests went to while open; null: the trip was advisory. */
  fallback: z.nullable(z.string()),
  evidence: z.array(
    z.object({
      session_id: z.string(),
      root_id: z.string(),
      verdict: z.enum(["stalling", "looping"]),
      at: z.number(),
    }),
  ),
});
export type BreakerTripView = z.infer<typeof breakerTripSchema>;

// The answers, whole. The server types each answer `satisfies` its schema; the page
// parses the rows one by one (parseRows), so one bad row does not blank a table.
/**
 * GET /api/sessions: every flagged, refused or marked session first (on every
 * page), then a page of the others, most recently seen first. truncated: some
 * sessions are not in this answer (next_offset asks for the next page of others).
 */
export const sessionsResponseSchema = z.object({
  sessions: z.array(sessionViewSchema),
  total: z.number(),
  attention: z.number(),
  offset: z.number(),
  limit: z.number(),
  truncated: z.boolean(),
  next_offset: z.nullable(z.number()),
});
export type SessionsResponse = z.infer<typeof sessionsResponseSchema>;
export const eventsResponseSchema = z.object({
  events: z.array(eventViewSchema),
  router_events: z.optional(z.array(routerEventViewSchema)),
});
export type EventsResponse = z.infer<typeof eventsResponseSchema>;
export const treesResponseSchema = z.object({
  trees: z.array(refusalViewSchema),
  log: z.array(refusalViewSchema),
});
export type TreesResponse = z.infer<typeof treesResponseSchema>;
export const channelsResponseSchema = z.object({ channels: z.array(channelViewSchema) });
export type ChannelsResponse = z.infer<typeof channelsResponseSchema>;
export const deliveriesResponseSchema = z.object({ deliveries: z.array(deliverySchema) });
export type DeliveriesResponse = z.infer<typeof deliveriesResponseSchema>;
export const breakerResponseSchema = z.object({
  enabled: z.boolean(),
  window_ms: z.number(),
  models: z.array(breakerModelSchema),
  trips: z.array(breakerTripSchema),
});
export type BreakerResponse = z.infer<typeof breakerResponseSchema>;

export type RowsResult<T> = { rows: T[]; problems: string[] };

/** Parses each item on its own: good rows are kept, bad ones become one problem line each. */
export function parseRows<T>(items: unknown[], schema: z.ZodMiniType<T>, label: string): RowsResult<T> {
  const rows: T[] = [];
  const problems: string[] = [];
  items.forEach((item, i) => {
    const r = schema.safeParse(item);
    if (r.success) rows.push(r.data);
    else {
      const first = r.error.issues[0];
      problems.push(`${label}[${i}].${first?.path.join(".") ?? ""}: ${first?.message ?? "invalid"}`);
    }
  });
  return { rows, problems };
}

/** The list inside a response that is either `{key: [...]}` or a bare array. */
export function listIn(body: unknown, key: string): unknown[] | null {
  if (Array.isArray(body)) return body;
  if (typeof body === "object" && body !== null) {
    const v = (body as Record<string, unknown>)[key];
    if (Array.isArray(v)) return v;
  }
  return null;
}
