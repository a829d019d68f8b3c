// The behaviour breaker, wired: reads the gate's request records and the stored
// stall verdicts, applies the trip rule (rule.ts) and the state machine
// (state.ts), keeps every state change and trip in SQLite (store.ts), raises a
// critical alert per trip, and answers the gate's question "where does a
// request for model M go now?" synchronously from an in-memory copy.
//
// Fresh evidence: after a close (quiet probe or admin Resume) only stalls after
// that instant count toward a new trip, and a half-open model re-trips only on
// at least one stall that arrived during its probe. Old evidence still inside
// the window cannot re-trip a model a human (or a quiet probe) has cleared.
import { type Config, formatDuration } from "../../shared/index.ts";
import type { BreakerModelView } from "../api/schemas.ts";
import type { Alert } from "../notify/types.ts";
import { metricLines, promText } from "../prom-text.ts";
import { type ModelRate, modelRates, type TripRule } from "./rule.ts";
import { type Backoff, type BreakerPhase, closedState, fallbackFor, tick, trip } from "./state.ts";
import type { BreakerStore, StoredState, TripRecord } from "./store.ts";

export type BreakerConfig = Config["breaker"];

/** The header the gate adds to a response it sent to a fallback model. */
export const BREAKER_HEADER = "x-stallguard-breaker";

export interface BreakerServiceOptions {
  store: BreakerStore;
  config: () => BreakerConfig;
  notify?: (alert: Alert) => void;
  log?: (line: string) => void;
  now?: () => number;
}

/** One model as GET /api/breaker shows it (router-ext/api/schemas.ts). */
export type ModelView = BreakerModelView;

export interface BreakerView {
  enabled: boolean;
  window_ms: number;
  models: ModelView[];
  trips: TripRecord[];
}

export interface ModelRoute {
  model: string;
  header: string;
}

const PHASE_VALUE: Record<BreakerPhase, number> = { closed: 0, half_open: 1, open: 2 };

function round(n: number): number {
  return Number.isFinite(n) ? Math.round(n * 1e4) / 1e4 : 0;
}

export function ruleOf(c: BreakerConfig): TripRule {
  return {
    minSessions: c.min_sessions,
    windowMs: c.window,
    rateRatio: c.rate_ratio,
    minTraffic: c.min_traffic,
  };
}

export function backoffOf(c: BreakerConfig): Backoff {
  return { cooldownMs: c.cooldown, backoff: c.backoff, maxCooldownMs: c.max_cooldown };
}

/** Whether a rule-tripped model has fresh evidence, given its current (ticked) state. */
export function freshEnough(r: ModelRate, s: StoredState, minSessions: number): boolean {
  if (s.phase === "half_open") return r.evidence.some((e) => s.until !== null && e.at >= s.until);
  if (s.quietSince === null) return true;
  const since = s.quietSince;
  return new Set(r.evidence.filter((e) => e.at > since).map((e) => e.rootId)).size >= minSessions;
}

export class BreakerService {
  private readonly states = new Map<string, StoredState>();
  private readonly now: () => number;
  private readonly log: (line: string) => void;
  private timer: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly opts: BreakerServiceOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? (() => {});
    for (const s of opts.store.states()) this.states.set(s.model, s);
  }

  private get cfg(): BreakerConfig {
    return this.opts.config();
  }

  private stored(model: string): StoredState {
    return this.states.get(model) ?? { ...closedState(model), quietSince: null, updatedAt: 0 };
  }

  private send(alert: Alert): void {
    try {
      this.opts.notify?.(alert);
    } catch (err) {
      this.log(`breaker: alert failed: ${(err as Error).message}`);
    }
  }

  /** Moves every model's state forward in time (open -> half_open -> closed) and persists changes. */
  tick(now = this.now()): void {
    for (const s of [...this.states.values()]) {
      const next = tick(s, now);
      if (next.phase === s.phase) continue;
      const saved: StoredState = {
        ...next,
        quietSince: next.phase === "closed" ? now : s.quietSince,
        updatedAt: now,
      };
      this.opts.store.save(saved, s.phase, "breaker");
      this.states.set(s.model, saved);
      this.log(`breaker: ${s.model} ${s.phase} -> ${saved.phase}`);
      if (saved.phase === "closed") {
        this.send({
          dedup_key: `breaker:${s.model}`,
          severity: "info",
          state: "resolve",
          title: `stallguard: model ${s.model} closed again`,
          summary: `the probe of ${s.model} passed without a new trip; requests go to it again`,
          details: "",
          source: "breaker",
          at: now,
        });
      }
    }
  }

  /** Applies the trip rule over the window ending now; returns the trips it recorded. */
  evaluate(now = this.now()): TripRecord[] {
    this.tick(now);
    const c = this.cfg;
    if (!c.enabled) return [];
    const rule = ruleOf(c);
    const from = now - c.window;
    const rates = modelRates(this.opts.store.served(from, now), this.opts.store.stalls(from, now), rule, now);
    const out: TripRecord[] = [];
    for (const r of rates) {
      if (!r.trip) continue;
      const cur = this.stored(r.model);
      if (cur.phase === "open" || !freshEnough(r, cur, c.min_sessions)) continue;
      const opened = trip(cur, now, backoffOf(c));
      const next: StoredState = { ...opened, quietSince: cur.quietSince, updatedAt: now };
      const fallback = fallbackFor(r.model, c.fallbacks);
      const record: Omit<TripRecord, "seq"> = {
        model: r.model,
        at: now,
        previous: cur.phase,
        trips: next.trips,
        cooldown_ms: (next.until ?? now) - now,
        until: next.until ?? now,
        window_ms: c.window,
        window_from: from,
        min_sessions: c.min_sessions,
        rate_ratio: c.rate_ratio,
        served_trees: r.servedTrees,
        stalled_trees: r.stalledTrees,
        rate: round(r.rate),
        others_served: r.othersServed,
        others_stalled: r.othersStalled,
        others_rate: round(r.othersRate),
        ratio: round(r.ratio),
        fallback: fallback && fallback !== r.model ? fallback : null,
        evidence: r.evidence.map((e) => ({
          session_id: e.sessionId,
          root_id: e.rootId,
          verdict: e.verdict,
          at: e.at,
        })),
      };
      const seq = this.opts.store.recordTrip(record, next);
      this.states.set(r.model, next);
      out.push({ ...record, seq });
      const where = record.fallback
        ? `requests go to ${record.fallback} until ${new Date(record.until).toISOString()}`
        : "advisory: no fallback configured, traffic unchanged";
      this.log(`breaker: ${r.model} tripped (${r.stalledTrees}/${r.servedTrees} trees stalled); ${where}`);
      this.send({
        dedup_key: `breaker:${r.model}`,
        severity: "critical",
        state: "trigger",
        title: `stallguard: model ${r.model} tripped`,
        summary:
          `${r.stalledTrees} of ${r.servedTrees} trees stalled in ${formatDuration(c.window)} ` +
          `(rate ${round(r.rate)} vs others ${round(r.othersRate)}, x${round(r.ratio)}); ${where}`,
        details: record.evidence.map((e) => `${e.verdict} ${e.session_id} (tree ${e.root_id})`).join("\n"),
        source: "breaker",
        at: now,
      });
    }
    return out;
  }

  /** Called with the verdicts of freshly stored transitions; evaluates when one is a stall. */
  onVerdicts(verdicts: readonly string[], now = this.now()): TripRecord[] {
    if (!verdicts.some((v) => v === "stalling" || v === "looping")) return [];
    return this.evaluate(now);
  }

  /** The admin Resume: closes the model at once; only later stalls count toward a new trip. */
  resume(model: string, by: string, now = this.now()): StoredState {
    const cur = this.stored(model);
    const next: StoredState = {
      ...closedState(model),
      resumedBy: by,
      resumedAt: now,
      quietSince: now,
      updatedAt: now,
    };
    this.opts.store.save(next, cur.phase, by);
    this.states.set(model, next);
    this.log(`breaker: ${model} resumed by ${by}`);
    if (cur.phase !== "closed") {
      this.send({
        dedup_key: `breaker:${model}`,
        severity: "info",
        state: "resolve",
        title: `stallguard: model ${model} resumed`,
        summary: `${by} resumed ${model}; requests go to it again`,
        details: "",
        source: "breaker",
        at: now,
      });
    }
    return next;
  }

  /** Sync, for the gate: the fallback for a model that is open right now, else null. */
  route(model: string, now = this.now()): ModelRoute | null {
    const c = this.cfg;
    if (!c.enabled) return null;
    const s = this.states.get(model);
    if (!s || tick(s, now).phase !== "open") return null;
    const fb = fallbackFor(model, c.fallbacks);
    if (!fb || fb === model) return null;
    return { model: fb, header: `${model} -> ${fb}`.replace(/[^\x20-\x7e]/g, "?").slice(0, 600) };
  }

  view(now = this.now(), tripLimit = 100): BreakerView {
    this.tick(now);
    const c = this.cfg;
    const from = now - c.window;
    const rates = new Map(
      modelRates(this.opts.store.served(from, now), this.opts.store.stalls(from, now), ruleOf(c), now).map(
        (r) => [r.model, r],
      ),
    );
    const names = [...new Set([...this.states.keys(), ...rates.keys()])].sort();
    const models = names.map((m): ModelView => {
      const s = this.stored(m);
      const r = rates.get(m);
      return {
        model: m,
        phase: s.phase,
        trips: s.trips,
        opened_at: s.openedAt,
        until: s.until,
        probe_until: s.probeUntil,
        resumed_by: s.resumedBy,
        resumed_at: s.resumedAt,
        fallback: fallbackFor(m, c.fallbacks) === m ? null : fallbackFor(m, c.fallbacks),
        served_trees: r ? r.servedTrees : null,
        stalled_trees: r ? r.stalledTrees : null,
        rate: r ? round(r.rate) : null,
        others_rate: r ? round(r.othersRate) : null,
        ratio: r ? round(r.ratio) : null,
      };
    });
    return { enabled: c.enabled, window_ms: c.window, models, trips: this.opts.store.trips(tripLimit) };
  }

  /** Prometheus text: the phase per model (0 closed, 1 half_open, 2 open). */
  metrics(now = this.now()): string {
    const states = [...this.states.values()].sort((a, b) => a.model.localeCompare(b.model));
    return promText([
      ...metricLines(
        "stallguard_breaker_state",
        "gauge",
        "Behaviour breaker phase per model: 0 closed, 1 half_open, 2 open.",
        states.map((s) => [{ model: s.model }, PHASE_VALUE[tick(s, now).phase]]),
      ),
      ...metricLines(
        "stallguard_breaker_trips",
        "gauge",
        "Trips since the model was last closed.",
        states.map((s) => [{ model: s.model }, s.trips]),
      ),
    ]);
  }

  /** Ticks and evaluates periodically (unref'd); returns a stop function. */
  start(everyMs: number): () => void {
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      try {
        this.evaluate();
      } catch (err) {
        this.log(`breaker: evaluate failed: ${(err as Error).message}`);
      }
    }, everyMs);
    this.timer.unref?.();
    return () => clearInterval(this.timer);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
