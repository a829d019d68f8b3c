// The breaker's per-model state machine, pure: closed -> open (cooldown with
// back-off) -> half_open (traffic returns to the model as a probe) -> closed
// when a probe period passes without a new trip, or open again with a longer
// cooldown when it trips during the probe. An admin Resume closes it at once.

export type BreakerPhase = "closed" | "open" | "half_open";

export interface BreakerState {
  model: string;
  phase: BreakerPhase;
  /** Trips since the model was last closed; drives the back-off. */
  trips: number;
  openedAt: number | null;
  /** When an open breaker moves to half_open. */
  until: number | null;
  /** When a half_open breaker closes if nothing trips. */
  probeUntil: number | null;
  resumedBy: string | null;
  resumedAt: number | null;
}

export interface Backoff {
  cooldownMs: number;
  backoff: number;
  maxCooldownMs: number;
}

export function closedState(model: string): BreakerState {
  return {
    model,
    phase: "closed",
    trips: 0,
    openedAt: null,
    until: null,
    probeUntil: null,
    resumedBy: null,
    resumedAt: null,
  };
}

export function cooldownFor(trips: number, b: Backoff): number {
  return Math.min(b.maxCooldownMs, b.cooldownMs * b.backoff ** Math.max(0, trips - 1));
}

/** Moves time forward: open -> half_open after the cooldown, half_open -> closed after the probe. */
export function tick(s: BreakerState, now: number): BreakerState {
  if (s.phase === "open" && s.until !== null && now >= s.until) {
    const probe = s.until - (s.openedAt ?? s.until);
    return { ...s, phase: "half_open", probeUntil: now + probe };
  }
  if (s.phase === "half_open" && s.probeUntil !== null && now >= s.probeUntil) {
    return { ...closedState(s.model), resumedBy: s.resumedBy, resumedAt: s.resumedAt };
  }
  return s;
}

/** The trip rule fired for this model. An already open breaker stays as it is. */
export function trip(s: BreakerState, now: number, b: Backoff): BreakerState {
  const cur = tick(s, now);
  if (cur.phase === "open") return cur;
  const trips = cur.trips + 1;
  return {
    ...cur,
    phase: "open",
    trips,
    openedAt: now,
    until: now + cooldownFor(trips, b),
    probeUntil: null,
  };
}

export function resume(s: BreakerState, now: number, by: string): BreakerState {
  return { ...closedState(s.model), resumedBy: by, resumedAt: now };
}

/** Whether requests for this model go to its fallback right now. */
export function isOpen(s: BreakerState, now: number): boolean {
  return tick(s, now).phase === "open";
}

/** The fallback for a model: an exact model entry first, then the longest provider prefix ("openrouter/"). */
export function fallbackFor(model: string, fallbacks: Readonly<Record<string, string>>): string | null {
  if (fallbacks[model]) return fallbacks[model] ?? null;
  let best: string | null = null;
  for (const key of Object.keys(fallbacks)) {
    if (key.endsWith("/") && model.startsWith(key) && (!best || key.length > best.length)) best = key;
  }
  return best ? (fallbacks[best] ?? null) : null;
}
