// The notifier's values: alerts in, delivery records and channel status out.
// Only ids, agents, verdicts and counts travel in an alert's title and summary;
// details is the core's incident report, built from events only.
import { z } from "zod";
import type { ChannelConfig, Severity } from "../../shared/index.ts";
import type { ChannelView, Delivery } from "../api/schemas.ts";

export type { Severity };
export type ChannelType = ChannelConfig["type"];

export const SEVERITIES = ["info", "warning", "critical"] as const;
export const severitySchema = z.enum(SEVERITIES);

/** Rank for min_severity comparisons. */
export function severityRank(s: Severity): number {
  return SEVERITIES.indexOf(s);
}

export const alertSchema = z.strictObject({
  /** For no-progress alerts: the tree root session id. */
  dedup_key: z.string().min(1).max(200),
  severity: severitySchema,
  state: z.enum(["trigger", "escalate", "resolve"]),
  title: z.string().min(1).max(200),
  /** One line. */
  summary: z
    .string()
    .max(500)
    .refine((s) => !/[\r\n]/.test(s), { message: "one line" }),
  /** The incident report (may be empty). */
  details: z.string().max(8000),
  source: z.enum(["no-progress", "watchdog", "breaker", "test"]),
  /** Milliseconds since the epoch. */
  at: z.number().int().min(0),
});
export type Alert = z.infer<typeof alertSchema>;
export type AlertState = Alert["state"];
export type AlertSource = Alert["source"];

/** One delivery attempt series (first try plus at most one retry), or an alert dropped at the queue (GET /api/deliveries). */
export type { Delivery };

/** What GET /api/channels shows for one channel (before the diagnostics' problems): settings and counters, never a secret. */
export type ChannelStatus = Omit<ChannelView, "problems">;

/** How many alerts a channel let through or held back, since start. */
export type ChannelCounters = ChannelStatus["counters"];

/** A startup/health check result for one channel. */
export interface ChannelDiagnostic {
  channel: string;
  type: ChannelType;
  ok: boolean;
  /** Plain-language problems; empty when ok. */
  problems: string[];
}

export interface ChannelPatch {
  enabled?: boolean;
  min_severity?: Severity;
}

export interface Notifier {
  /** Queues an alert for every channel that wants it. Returns at once; never throws. */
  send(alert: Alert): void;
  channels(): ChannelStatus[];
  /** Changes a channel at runtime; null when no channel has that name. */
  setChannel(name: string, patch: ChannelPatch): ChannelStatus | null;
  /** Sends a test alert through the channel now (bypassing filters and limits); null when unknown. */
  test(name: string): Promise<Delivery | null>;
  /** Recent delivery records, newest first. */
  deliveries(limit?: number): Delivery[];
  diagnostics(): Promise<ChannelDiagnostic[]>;
  /** Resolves when nothing is queued or in flight. */
  idle(): Promise<void>;
  /** Stops accepting alerts, lets queued ones finish for a short grace, then aborts the rest. */
  close(graceMs?: number): Promise<void>;
}

/** A channel adapter: one delivery attempt. Rejects with a message that names no secret value. */
export interface ChannelAdapter {
  deliver(alert: Alert, signal: AbortSignal): Promise<void>;
  /** Safe one-line description of the target. */
  target(): string;
  /** Problems that would make every delivery fail (missing env vars, no bus). */
  diagnose(): Promise<string[]>;
}
