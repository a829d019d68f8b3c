// The wire contract between reporters (plugin, watchdog) and the router
// extension: POST /progress bodies. Strict zod schemas, so an unknown field or
// a malformed value is a 400 with its path, never a silent drop. Only ids,
// verdicts, counts, hashes and coarse targets travel; never content.
import { z } from "zod";
import { DISPLAY_TEXT_PATTERN } from "./display-text.ts";
import type { VerdictChange } from "./forest.ts";
import { FLAG_REASONS } from "./incident-report.ts";
import { issuePath as pathOf } from "./issue-path.ts";
import type { Signals } from "./types.ts";

/**
 * A session id: opencode's charset (ses_ and base62) plus the separators other
 * reporters use ("_", ".", ":", "-"). Control, bidi and other non-ASCII
 * characters are refused, so an id cannot forge a log line or an alert, and
 * reads back exactly as it was sent.
 */
export const ID_PATTERN = /^[A-Za-z0-9_.:-]{1,200}$/;
export const idSchema = z
  .string()
  .regex(ID_PATTERN, "an id is 1-200 of A-Z a-z 0-9 _ . : - (opencode's id charset)");
const id = idSchema;
/**
 * An agent as every way in names it (the wire, the gate's x-router-agent
 * header): the slug shared/policy.ts slugAgent makes, so a name cannot carry
 * markup, control or bidi characters into a page, an alert or a metric label.
 */
export const AGENT_PATTERN = /^[a-z0-9_-]{1,64}$/;
export const agentSchema = z.string().regex(AGENT_PATTERN, "slug: lowercase [a-z0-9_-], at most 64");
const agent = agentSchema;
const verdict = z.enum(["ok", "stalling", "looping"]);
const reason = z.enum(FLAG_REASONS);
const count = z.number().int().min(0).max(1e12);
const target = z.string().max(300);
const version = z.string().min(1).max(64);

/** The signals a transition carries, snake_case on the wire. */
export const wireSignalsSchema = z.strictObject({
  calls: count,
  landed: count,
  turns: count,
  turns_since_landed: count,
  calls_since_landed: count,
  usd_since_landed: z.number().min(0).max(1e9),
  usd_total: z.number().min(0).max(1e9),
  dup_share: z.number().min(0).max(1),
  ndup_share: z.number().min(0).max(1),
  fail_streak: count,
  context_tokens: count,
  max_context_tokens: count,
  novelty: z.number().min(0).max(1),
  injected_since_landed: count,
  flip_flops: count,
  compactions: count,
  read_only: z.boolean(),
  last_landed_at: z.number().int().min(0).nullable(),
});
export type WireSignals = z.infer<typeof wireSignalsSchema>;

const repeatSchema = z.strictObject({ target, count });

/**
 * The evidence behind a verdict for the operator's session page: coarse
 * "tool target" strings and counts only, never arguments or content. Optional,
 * so a plugin from before it was added is still accepted.
 */
export const wireEvidenceSchema = z.strictObject({
  /** The session's most repeated calls since it started, most first. */
  top_targets: z.array(repeatSchema).max(5),
  /** The most repeated call whose result was the same each time, since the last landed change. */
  same_result: repeatSchema.nullable(),
  /** The call the failure streak is on. */
  fail_target: target.nullable(),
  /** Two to four calls going round with the same results: one of them, the period and whole turns in a row. */
  cycle: z
    .strictObject({ target, period: z.number().int().min(2).max(16), reps: count })
    .nullable()
    .optional(),
  /** The same call, or two calls in turn (period 1 or 2), repeated in a row with the same results. */
  in_a_row: z
    .strictObject({ target, period: z.number().int().min(1).max(2), repeats: count })
    .nullable()
    .optional(),
  /** Different calls done again in the same order with the same results: the latest, the period, how many. */
  retrace: z
    .strictObject({ target, period: z.number().int().min(2).max(64), calls: count, distinct: count })
    .nullable()
    .optional(),
});
export type WireEvidence = z.infer<typeof wireEvidenceSchema>;

export const transitionSchema = z.strictObject({
  type: z.literal("transition"),
  /** Idempotency key: a retried report carries the same id and is counted once. */
  id: z.string().regex(/^[A-Za-z0-9_.:-]{8,128}$/),
  source: z.enum(["plugin", "watchdog"]),
  session_id: id,
  parent_id: id.nullable(),
  root_id: id,
  agent,
  verdict,
  previous: verdict,
  reason: reason.nullable(),
  signals: wireSignalsSchema,
  /** The most repeated normalized call in the window ("tool target"): the core's topRepeat (wireTopRepeat). */
  top_target: target.nullable(),
  /** How often that call repeated. */
  top_target_count: count,
  /** The incident report (section 5 format): built from events only. */
  report: z.string().max(4000),
  at: z.number().int().min(0),
  plugin_version: version.nullable(),
  evidence: wireEvidenceSchema.optional(),
  /** The watchdog's second opinion, when one was asked for. */
  second_opinion: z
    .strictObject({ model: z.string().max(200), stuck: z.boolean(), reason: z.string().max(300) })
    .nullable()
    .optional(),
});
export type Transition = z.infer<typeof transitionSchema>;

/** Text opencode shows the user about a session (its title, its folder): cleaned by shared/display-text.ts. */
const displayText = (max: number) =>
  z.string().max(max).regex(DISPLAY_TEXT_PATTERN, "no control, bidi or zero-width characters");

/** The caps on a session's title and folder on the wire. */
export const TITLE_MAX = 200;
export const DIRECTORY_MAX = 300;

export const heartbeatSessionSchema = z.strictObject({
  session_id: id,
  parent_id: id.nullable(),
  root_id: id,
  agent,
  verdict,
  turns: count,
  turns_since_landed: count,
  last_landed_at: z.number().int().min(0).nullable(),
  context_tokens: count,
  // The session's current figures, so the readout keeps up after a transition.
  // Optional: a plugin from before they were added is still accepted.
  calls: count.optional(),
  landed: count.optional(),
  usd_since_landed: z.number().min(0).max(1e9).optional(),
  /** The most repeated call in the window now ("tool target"), as a transition names it. */
  top_target: target.nullable().optional(),
  top_target_count: count.optional(),
  /** What opencode shows the user: the session's title, its folder (home as ~) and when it was created. */
  title: displayText(TITLE_MAX).nullable().optional(),
  directory: displayText(DIRECTORY_MAX).nullable().optional(),
  created_at: z.number().int().min(0).nullable().optional(),
});
export type HeartbeatSession = z.infer<typeof heartbeatSessionSchema>;

export const heartbeatSchema = z.strictObject({
  type: z.literal("heartbeat"),
  /** One id per plugin process, so two opencode instances are told apart. */
  instance_id: z.string().regex(/^[A-Za-z0-9_.:-]{4,128}$/),
  plugin_version: version,
  at: z.number().int().min(0),
  sessions: z.array(heartbeatSessionSchema).max(2000),
});
export type Heartbeat = z.infer<typeof heartbeatSchema>;

export const watchdogTickSchema = z.strictObject({
  type: z.literal("watchdog_tick"),
  at: z.number().int().min(0),
  servers: count,
  sessions: count,
  flagged: count,
  /**
   * True when the tick could read no source although one was there (opencode's database
   * unreadable, a server answering in a shape it does not know). From watchdogs without `db`:
   * true also when no server answered, which says nothing runs (servers 0), not blindness.
   */
  blind: z.boolean(),
  /** What the tick made of opencode's database; absent from watchdogs older than that source. */
  db: z.enum(["off", "missing", "read", "unreadable", "unexpected_shape"]).optional(),
});
export type WatchdogTick = z.infer<typeof watchdogTickSchema>;

/** The plugin ran (or failed to run) a directive the router handed it (modes: compact, recover). */
export const directiveResultSchema = z.strictObject({
  type: z.literal("directive_result"),
  directive_id: z.string().regex(/^[A-Za-z0-9_.:-]{4,128}$/),
  session_id: id,
  root_id: id,
  ok: z.boolean(),
  /** A short machine reason on failure ("abort_failed", "summarize_failed", ...), never content. */
  error: z.string().max(200).nullable(),
  at: z.number().int().min(0),
});
export type DirectiveResult = z.infer<typeof directiveResultSchema>;

export const progressMessageSchema = z.discriminatedUnion("type", [
  transitionSchema,
  heartbeatSchema,
  watchdogTickSchema,
  directiveResultSchema,
]);

/** What the router asks a live plugin to do for an acting mode. */
export const directiveSchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9_.:-]{4,128}$/),
  /** compact: summarize the stuck session; recover: abort it and its root, then summarize the root. */
  action: z.enum(["compact", "recover"]),
  session_id: id,
  root_id: id,
  report: z.string().max(4000),
});
export type Directive = z.infer<typeof directiveSchema>;

/**
 * A message the router asks the reporting plugin to show in opencode (a mode's
 * hard stop). Ids and counts only. Sent only when there is one, so a plugin
 * older than the field keeps reading every other answer.
 */
export const toastRequestSchema = z.strictObject({
  session_id: id,
  title: z.string().min(1).max(100),
  message: z.string().max(500),
  variant: z.enum(["info", "success", "warning", "error"]),
});
export type ToastRequest = z.infer<typeof toastRequestSchema>;

/** The /progress answer: what was accepted, plus directives and toasts for the reporting plugin. */
export const progressResponseSchema = z.strictObject({
  accepted: count,
  duplicates: count,
  directives: z.array(directiveSchema).max(50).default([]),
  toasts: z.array(toastRequestSchema).max(20).optional(),
  /**
   * Sessions whose watchdog transition was not stored because their plugin reports them
   * (one judge per session). Sent only when there is one: only the watchdog gets it.
   */
  covered: z.array(id).max(100).optional(),
});
export type ProgressResponse = z.infer<typeof progressResponseSchema>;
export type ProgressMessage = z.infer<typeof progressMessageSchema>;

/** Every message of one POST: a single object or a batch (the plugin's retry queue flushes batches). */
export const progressBodySchema = z.union([progressMessageSchema, z.array(progressMessageSchema).max(100)]);

export type ParseResult<T> = { ok: true; value: T } | { ok: false; errors: string[] };

const progressBatchSchema = z.array(progressMessageSchema).max(100);

/** Validates a /progress body; errors read `path: message`. */
export function parseProgressBody(body: unknown): ParseResult<ProgressMessage[]> {
  // Same rules as progressBodySchema, but parsed by shape so an issue keeps its
  // path ("[1].blind: ...") instead of collapsing into the union's "(root): Invalid input".
  const r = Array.isArray(body)
    ? progressBatchSchema.safeParse(body)
    : progressMessageSchema.transform((m) => [m]).safeParse(body);
  if (r.success) return { ok: true, value: r.data };
  return {
    ok: false,
    errors: r.error.issues.flatMap((i) =>
      i.code === "unrecognized_keys"
        ? i.keys.map((k) => `${pathOf([...i.path, k])}: unknown field`)
        : [`${pathOf(i.path)}: ${i.message}`],
    ),
  };
}

const round = (n: number, d = 4) => Math.round(n * 10 ** d) / 10 ** d;
const clampCount = (n: number) => Math.max(0, Math.min(1e12, Math.floor(Number.isFinite(n) ? n : 0)));
/** Epoch milliseconds are past 1e12 (since 2001): a timestamp must not be clamped like a count. */
const clampTime = (n: number) =>
  Math.max(0, Math.min(Number.MAX_SAFE_INTEGER, Math.floor(Number.isFinite(n) ? n : 0)));

/** The core's Signals in wire form. */
export function toWireSignals(s: Signals): WireSignals {
  return {
    calls: clampCount(s.calls),
    landed: clampCount(s.landed),
    turns: clampCount(s.turns),
    turns_since_landed: clampCount(s.turnsSinceLanded),
    calls_since_landed: clampCount(s.callsSinceLanded),
    usd_since_landed: round(Math.max(0, s.usdSinceLanded), 6),
    usd_total: round(Math.max(0, s.usdTotal), 6),
    dup_share: round(s.dupShare),
    ndup_share: round(s.ndupShare),
    fail_streak: clampCount(s.failStreak),
    context_tokens: clampCount(s.contextTokens),
    max_context_tokens: clampCount(s.maxContextTokens),
    novelty: round(Math.min(1, Math.max(0, s.novelty))),
    injected_since_landed: clampCount(s.injectedSinceLanded),
    flip_flops: clampCount(s.flipFlops),
    compactions: clampCount(s.compactions),
    read_only: s.readOnly,
    last_landed_at: s.lastLandedAt === null ? null : clampTime(s.lastLandedAt),
  };
}

/** A stable idempotency key for one transition: the same change retried gives the same id. */
export function transitionId(source: "plugin" | "watchdog", c: VerdictChange): string {
  const safe = c.sessionId.replace(/[^A-Za-z0-9_.:-]/g, "_").slice(0, 80);
  return `${source === "plugin" ? "p" : "w"}:${safe}:${c.at}:${c.previous[0]}${c.verdict[0]}`;
}

const repeatText = (r: { tool: string; target: string }) => `${r.tool} ${r.target}`.slice(0, 300);

/** The evidence a transition carries: the core's coarse targets and counts. */
export function toWireEvidence(s: Signals): WireEvidence {
  return {
    top_targets: s.mostRepeated
      .slice(0, 5)
      .map((r) => ({ target: repeatText(r), count: clampCount(r.count) })),
    same_result: s.topSame ? { target: repeatText(s.topSame), count: clampCount(s.topSame.count) } : null,
    fail_target: s.failTarget === null ? null : s.failTarget.slice(0, 300),
    cycle: s.cycle
      ? { target: repeatText(s.cycle), period: s.cycle.period, reps: clampCount(s.cycle.reps) }
      : null,
    in_a_row: s.inARow
      ? { target: repeatText(s.inARow), period: s.inARow.period, repeats: clampCount(s.inARow.repeats) }
      : null,
    retrace: s.retrace
      ? {
          target: repeatText(s.retrace),
          period: s.retrace.period,
          calls: clampCount(s.retrace.calls),
          distinct: clampCount(s.retrace.distinct),
        }
      : null,
  };
}

/**
 * The one place the wire's top_target is mapped: it carries the core's topRepeat (the most
 * repeated normalized call in the window), not Signals.busiestTarget.
 */
export function wireTopRepeat(s: Signals): { top_target: string | null; top_target_count: number } {
  const top = s.topRepeat;
  return { top_target: top ? repeatText(top) : null, top_target_count: top ? clampCount(top.count) : 0 };
}

/** The current figures a heartbeat carries for a session (counts and the coarse top repeat only). */
export function toHeartbeatFigures(
  s: Signals,
): Pick<HeartbeatSession, "calls" | "landed" | "usd_since_landed" | "top_target" | "top_target_count"> {
  return {
    calls: clampCount(s.calls),
    landed: clampCount(s.landed),
    usd_since_landed: round(Math.min(1e9, Math.max(0, s.usdSinceLanded)), 6),
    ...wireTopRepeat(s),
  };
}

/** A wire transition read back into the core's names (all but the signals, which travel as WireSignals). */
export function fromTransition(t: Transition): Omit<VerdictChange, "signals"> {
  return {
    sessionId: t.session_id,
    parentId: t.parent_id,
    rootId: t.root_id,
    agent: t.agent,
    previous: t.previous,
    verdict: t.verdict,
    reason: t.reason,
    at: t.at,
  };
}

/** Builds the wire transition for a verdict change. */
export function toTransition(
  c: VerdictChange,
  opts: { source: "plugin" | "watchdog"; report: string; pluginVersion: string | null },
): Transition {
  return {
    type: "transition",
    id: transitionId(opts.source, c),
    source: opts.source,
    session_id: c.sessionId,
    parent_id: c.parentId,
    root_id: c.rootId,
    agent: c.agent,
    verdict: c.verdict,
    previous: c.previous,
    reason: c.reason,
    signals: toWireSignals(c.signals),
    ...wireTopRepeat(c.signals),
    report: opts.report.slice(0, 4000),
    at: clampTime(c.at),
    plugin_version: opts.pluginVersion,
    evidence: toWireEvidence(c.signals),
  };
}
