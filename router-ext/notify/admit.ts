// Which alerts a channel takes: enabled, min_severity, resolve_messages, the
// quiet window per dedup_key and the rate limit. Deterministic: the clock is
// an argument, the state a plain value owned by one channel.
import { type Alert, type Severity, severityRank } from "./types.ts";

export interface AdmitSettings {
  enabled: boolean;
  min_severity: Severity;
  resolve_messages: boolean;
  /** Channels with a lifecycle (PagerDuty) always get the resolve of an incident they were sent. */
  lifecycle: boolean;
  rate_limit: { count: number; per: number };
  quiet_window: number;
}

interface KeyState {
  /** When a trigger or escalate for this key was last let through. */
  lastAt: number;
  /** A trigger went out and no resolve has followed. */
  open: boolean;
}

export interface AdmitState {
  /** When each recent delivery was admitted, oldest first (rate limit window). */
  admittedAt: number[];
  keys: Map<string, KeyState>;
}

export type Admission =
  | { admit: true; alert: Alert }
  | { admit: false; why: "filtered" | "suppressed" | "rate_limited" };

/** Bound on remembered dedup keys per channel; the oldest is forgotten first. */
export const MAX_KEYS = 2000;

export function createAdmitState(): AdmitState {
  return { admittedAt: [], keys: new Map() };
}

function remember(state: AdmitState, key: string, value: KeyState): void {
  state.keys.delete(key);
  state.keys.set(key, value);
  while (state.keys.size > MAX_KEYS) {
    const oldest = state.keys.keys().next().value;
    if (oldest === undefined) break;
    state.keys.delete(oldest);
  }
}

function rateFull(state: AdmitState, s: AdmitSettings, now: number): boolean {
  while (state.admittedAt.length > 0 && (state.admittedAt[0] ?? 0) <= now - s.rate_limit.per)
    state.admittedAt.shift();
  return state.admittedAt.length >= s.rate_limit.count;
}

/**
 * Decides whether one channel takes an alert now, and records the decision in
 * `state`. A resolve goes only where its trigger went (or, for a key this
 * channel never saw, where its severity would have gone). An escalate for a key
 * the channel has no open alert for becomes that channel's trigger. Critical
 * alerts and resolves pass the quiet window; nothing passes the rate limit
 * except a resolve that closes an alert this channel delivered (it takes no slot).
 */
export function admitAlert(state: AdmitState, s: AdmitSettings, alert: Alert, now: number): Admission {
  if (!s.enabled) return { admit: false, why: "filtered" };
  const known = state.keys.get(alert.dedup_key);
  if (alert.state === "resolve") {
    if (!s.resolve_messages && !s.lifecycle) {
      if (known) remember(state, alert.dedup_key, { ...known, open: false });
      return { admit: false, why: "filtered" };
    }
    if (known && !known.open) return { admit: false, why: "suppressed" };
    if (!known && severityRank(alert.severity) < severityRank(s.min_severity))
      return { admit: false, why: "filtered" };
    const closes = known?.open === true;
    if (!closes) {
      if (rateFull(state, s, now)) return { admit: false, why: "rate_limited" };
      state.admittedAt.push(now);
    }
    if (known) remember(state, alert.dedup_key, { ...known, open: false });
    return { admit: true, alert };
  }
  if (severityRank(alert.severity) < severityRank(s.min_severity)) return { admit: false, why: "filtered" };
  if (known && alert.severity !== "critical" && now - known.lastAt < s.quiet_window)
    return { admit: false, why: "suppressed" };
  if (rateFull(state, s, now)) return { admit: false, why: "rate_limited" };
  state.admittedAt.push(now);
  remember(state, alert.dedup_key, { lastAt: now, open: true });
  const out: Alert = alert.state === "escalate" && !known?.open ? { ...alert, state: "trigger" } : alert;
  return { admit: true, alert: out };
}
