// The session page's answer, GET /api/sessions/:id, and the marks API
// (POST/DELETE /api/sessions/:id/mark, GET /api/labels). Like schemas.ts: the
// server's answers are typed `satisfies` these, the page parses with them, and
// unknown fields are dropped. Ids, verdicts, counts, money and coarse targets only.
import * as z from "zod/mini";
import { type MarkKindView, markViewSchema, refusalViewSchema, sessionViewSchema } from "./schemas.ts";

export { type MarkKindView, type MarkView, markKindSchema, markKinds, markViewSchema } from "./schemas.ts";

const verdict = z.enum(["ok", "stalling", "looping"]);
const numOrNull = z.nullable(z.number());

/** The wire signals the page reads (router-ext and shared/wire.ts name them alike). */
export const signalsViewSchema = z.object({
  calls: z.number(),
  landed: z.number(),
  turns_since_landed: z.number(),
  calls_since_landed: z.number(),
  usd_since_landed: z.number(),
  dup_share: z.number(),
  fail_streak: z.number(),
  context_tokens: z.number(),
  flip_flops: z.number(),
  injected_since_landed: z.number(),
  read_only: z.boolean(),
  last_landed_at: numOrNull,
});
export type SignalsView = z.infer<typeof signalsViewSchema>;

const repeatSchema = z.object({ target: z.string(), count: z.number() });
export const evidenceViewSchema = z.object({
  top_targets: z.array(repeatSchema),
  same_result: z.nullable(repeatSchema),
  fail_target: z.nullable(z.string()),
  /** Absent in transitions from before cycles were reported. */
  cycle: z.optional(z.nullable(z.object({ target: z.string(), period: z.number(), reps: z.number() }))),
  /** Absent in transitions from before repeats in a row and retraces were reported. */
  in_a_row: z.optional(z.nullable(z.object({ target: z.string(), period: z.number(), repeats: z.number() }))),
  retrace: z.optional(
    z.nullable(z.object({ target: z.string(), period: z.number(), calls: z.number(), distinct: z.number() })),
  ),
});
export type EvidenceView = z.infer<typeof evidenceViewSchema>;

/** A stored transition with what it carried. */
export const transitionViewSchema = z.object({
  verdict,
  previous: verdict,
  reason: z.nullable(z.string()),
  source: z.enum(["plugin", "watchdog"]),
  at: z.number(),
  signals: signalsViewSchema,
  top_target: z.nullable(z.string()),
  top_target_count: z.number(),
  /** null from a plugin older than the field. */
  evidence: z.nullable(evidenceViewSchema),
});
export type TransitionView = z.infer<typeof transitionViewSchema>;

/** A heartbeat's numbers for the session (kept when they changed). */
export const sampleViewSchema = z.object({
  at: z.number(),
  turns_since_landed: z.number(),
  last_landed_at: numOrNull,
  context_tokens: z.number(),
});
export type SampleView = z.infer<typeof sampleViewSchema>;

/** One model request the gate saw for the session or one of its direct children. */
export const requestViewSchema = z.object({
  at: z.number(),
  session_id: z.string(),
  agent: z.nullable(z.string()),
  status: z.number(),
  refused: z.boolean(),
  cost_usd: numOrNull,
  context_tokens: numOrNull,
});
export type RequestView = z.infer<typeof requestViewSchema>;

/** What the mode asked the plugin to do in the session's tree. */
export const directiveViewSchema = z.object({
  action: z.enum(["compact", "recover"]),
  session_id: z.string(),
  created_at: z.number(),
  done_at: numOrNull,
  ok: z.nullable(z.boolean()),
  error: z.nullable(z.string()),
});
export type DirectiveView = z.infer<typeof directiveViewSchema>;

/** GET /api/sessions/:id. */
export const sessionDetailSchema = z.object({
  session: sessionViewSchema,
  children: z.array(z.object({ session_id: z.string(), agent: z.nullable(z.string()), verdict })),
  transitions: z.array(transitionViewSchema),
  samples: z.array(sampleViewSchema),
  requests: z.array(requestViewSchema),
  /** The refusal log of the session and of its tree, oldest first. */
  refusals: z.array(refusalViewSchema),
  directives: z.array(directiveViewSchema),
  cap: z.nullable(z.object({ cap: z.number(), set_at: z.number() })),
  mark: z.nullable(markViewSchema),
  /** The live thresholds, for "value (warn at, loop at)". */
  thresholds: z.record(z.string(), z.number()),
  now: z.number(),
});
export type SessionDetail = z.infer<typeof sessionDetailSchema>;

/** POST /api/sessions/:id/mark and DELETE: the mark now, and what a false alarm lifted. */
export const markResponseSchema = z.object({
  session_id: z.string(),
  root_id: z.string(),
  mark: z.nullable(markViewSchema),
  /** Refusals lifted ("tree ses_x", "session ses_y"); a false alarm lifts every one in the tree. */
  lifted: z.array(z.string()),
  /** Why nothing was lifted (a session never flagged, nothing refused), or null. */
  note: z.optional(z.nullable(z.string())),
});
export type MarkResponse = z.infer<typeof markResponseSchema>;

/**
 * GET /api/labels and the admin page's export: the labels document
 * `stallguard calibrate --labels` reads (a false alarm is "healthy", a
 * confirmed loop "loop"), with the mark beside each label.
 */
export type LabelsDoc = Record<
  string,
  { label: "healthy" | "loop"; mark: MarkKindView; by: string; at: number; verdict: string }
>;

/** A mark's label for calibration. */
export const labelOfMark = (kind: MarkKindView): "healthy" | "loop" =>
  kind === "false_alarm" ? "healthy" : "loop";
