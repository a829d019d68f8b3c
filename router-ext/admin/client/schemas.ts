// What the page reads from the HTTP API. Tolerant readers (unknown fields are
// ignored, missing optional ones become null) so a newer server does not blank
// the page; each row is parsed on its own so one bad row is reported, not fatal.
// zod/mini keeps the browser bundle small (classic zod adds ~450 kB).
import * as z from "zod/mini";

const str = z._default(z.nullable(z.string()), null);
const num = z._default(z.nullable(z.number()), null);
const time = z._default(z.nullable(z.union([z.number(), z.string()])), null);
const def = <T extends z.ZodMiniType>(t: T, v: NonNullable<z.output<T>>) => z._default(t, v as never);

export const sessionRowSchema = z.object({
  session_id: z.string(),
  parent_id: str,
  root_id: z.string(),
  agent: str,
  verdict: def(z.string(), "ok"),
  worst: str,
  flags: def(z.number(), 0),
  stage: str,
  plugin_live: def(z.boolean(), false),
  plugin_version: str,
  turns_since_landed: num,
  usd_since_landed: num,
  context_tokens: num,
  top_target: str,
  top_target_count: num,
  source: def(z.string(), "-"),
  last_seen_at: time,
  reason: str,
  report: str,
  refused: def(z.boolean(), false),
  stopped_by: str,
  stopped_at: time,
  /** Where turns and $ since landed come from: the gate's request records or the reporter. */
  spend_source: str,
  /** Why the configured mode could not act on the last detection (no live plugin). */
  cannot_act: str,
});
export type SessionRow = z.infer<typeof sessionRowSchema>;

export const healthSchema = z.object({
  ok: z.optional(z.boolean()),
  version: def(z.string(), "?"),
  db: def(z.string(), "?"),
  watchdog: z._default(
    z.nullable(z.object({ last_tick_at: time, blind: z._default(z.nullable(z.boolean()), null) })),
    null,
  ),
});
export type Health = z.infer<typeof healthSchema>;

export const eventSchema = z.object({
  session_id: z.string(),
  root_id: str,
  verdict: z.string(),
  previous: str,
  reason: str,
  source: str,
  at: time,
});
export type EventRow = z.infer<typeof eventSchema>;

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

export const knobSchema = z.object({
  path: z.string(),
  value: z.unknown(),
  default: z.unknown(),
  kind: z.enum(knobKinds),
  min: z.optional(z.number()),
  max: z.optional(z.number()),
  options: z.optional(z.array(z.string())),
  nullable: z.optional(z.boolean()),
  /** Set through the admin API rather than the config files. */
  overridden: z.optional(z.boolean()),
  description: def(z.string(), ""),
});
export type Knob = z.infer<typeof knobSchema>;

export const excludedSchema = z.object({ path: z.string(), why: z.string() });
export type ExcludedKnob = z.infer<typeof excludedSchema>;

export const knobsResponseSchema = z.object({
  knobs: z.array(z.unknown()),
  excluded: z._default(z.array(excludedSchema), []),
});

export const channelSchema = z.object({
  name: z.string(),
  type: def(z.string(), "?"),
  enabled: z.boolean(),
  min_severity: z.string(),
  /** What the notifier's diagnostics found wrong with the channel (missing D-Bus, unset env). */
  problems: z._default(z.array(z.string()), []),
  target: str,
});
export type Channel = z.infer<typeof channelSchema>;

export const deliverySchema = z.object({
  at: time,
  channel: str,
  severity: str,
  state: str,
  ok: z._default(z.nullable(z.boolean()), null),
  status: str,
  error: str,
  title: str,
  dedup_key: str,
  attempts: num,
});
export type Delivery = z.infer<typeof deliverySchema>;

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
