// The behaviour breaker, wired: reads the gate's request records and the stored
// stall verdicts, applies the trip rule (rule.ts) and the state machine
// (state.ts), keeps every state change and trip in the router's database
// (store.ts, through writes.ts: awaited, in order, off the gate's path), raises
// a critical alert per trip, and answers the gate's question "where does a
// request for model M go now?" synchronously from an in-memory copy, loaded
// by reload() at start (and by a replica when another one changed a state).
//
// Fresh evidence: after a close (quiet probe or admin Resume) only stalls after
// that instant count toward a new trip, and a half-open model re-trips only on
// at least one stall that arrived during its probe. Old evidence still inside
// the window cannot re-trip a model a human (or a quiet probe) has cleared.
import { type Config, formatDuration } from "../../shared/index.ts";
import type { BreakerModelView } from "../api/schemas.ts";
import type { Alert } from "../notify/types.ts";
import { metricLines, promText, single } from "../prom-text.ts";
import { type ModelRate, mayTrip, modelRates, type StallRecord, type TripRule } from "./rule.ts";
import { type Backoff, type BreakerPhase, closedState, fallbackFor, tick, trip } from "./state.ts";
import type { BreakerStore, StoredState, TripRecord } from "./store.ts";
import { BreakerWrites } from "./writes.ts";

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

/** The sessions whose requests the rule reads: those with a stall verdict. */
function stalledSessions(stalls: readonly StallRecord[]): string[] {
  return stalls.map((s) => s.sessionId);
}

export class BreakerService {
  private states = new Map<string, StoredState>();
  private readonly now: () => number;
  private readonly log: (line: string) => void;
  private readonly writes: BreakerWrites;
  /** Evaluations run one at a time (a second waits), so a model trips once. */
  private evaluating: Promise<unknown> = Promise.resolve();
  private timer: ReturnType<typeof setInterval> | undefined;

  /** Starts with no state: call reload() before the gate routes through it. */
  constructor(private readonly opts: BreakerServiceOptions) {
    this.now = opts.now ?? Date.now;
    this.log = opts.log ?? (() => {});
    this.writes = new BreakerWrites(opts.store, this.log);
  }

  /**
   * Reads every model's state again (at start, and on a replica when another
   * one changed a state). Waits for this process's own writes first; a state
   * this process could not store yet stays as it is in memory.
   */
  async reload(): Promise<void> {
    await this.writes.idle();
    const next = new Map<string, StoredState>();
    for (const s of await this.opts.store.states()) next.set(s.model, s);
    for (const [model, s] of this.states) if (this.writes.pending(model)) next.set(model, s);
    this.states = next;
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

  /**
   * Moves every model's state forward in time (open -> half_open -> closed) in
   * memory at once; resolves once the changes are stored (or failed, counted).
   */
  tick(now = this.now()): Promise<void> {
    const saves: Promise<boolean>[] = [];
    for (const s of [...this.states.values()]) {
      const next = tick(s, now);
      if (next.phase === s.phase) continue;
      const saved: StoredState = {
        ...next,
        quietSince: next.phase === "closed" ? now : s.quietSince,
        updatedAt: now,
      };
      this.states.set(s.model, saved);
      saves.push(this.writes.save(saved, s.phase, "breaker"));
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
    return Promise.all(saves).then(() => {});
  }

  /**
   * Applies the trip rule over the window ending now; returns the trips it
   * recorded (seq 0: a trip whose row could not be stored). Throws only when
   * the evidence cannot be read.
   */
  evaluate(now = this.now()): Promise<TripRecord[]> {
    const run = this.evaluating.then(() => this.evaluateNow(now));
    this.evaluating = run.catch(() => {});
    return run;
  }

  private async evaluateNow(now: number): Promise<TripRecord[]> {
    await this.writes.retry();
    await this.tick(now);
    const c = this.cfg;
    if (!c.enabled) return [];
    const rule = ruleOf(c);
    const from = now - c.window;
    const stalls = await this.opts.store.stalls(from, now);
    // Read every ten seconds: the window's requests only when a trip is possible.
    if (!mayTrip(stalls, rule, now)) return [];
    const served = await this.opts.store.served(from, now, stalledSessions(stalls));
    const rates = modelRates(served, stalls, rule, now);
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
      this.states.set(r.model, next);
      const seq = await this.writes.recordTrip(record, next);
      out.push({ ...record, seq: seq ?? 0 });
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

  /**
   * Called with the verdicts of freshly stored transitions; evaluates when one
   * is a stall. Never rejects: a failed evaluation is logged.
   */
  async onVerdicts(verdicts: readonly string[], now = this.now()): Promise<TripRecord[]> {
    if (!verdicts.some((v) => v === "stalling" || v === "looping")) return [];
    try {
      return await this.evaluate(now);
    } catch (err) {
      this.log(`breaker: evaluate failed: ${(err as Error).message}`);
      return [];
    }
  }

  /**
   * The admin Resume: closes the model at once (in memory, so the gate routes
   * to it again); only later stalls count toward a new trip. Resolves once the
   * state is stored, or its failed write is counted and kept for a retry.
   */
  async resume(model: string, by: string, now = this.now()): Promise<StoredState> {
    const cur = this.stored(model);
    const next: StoredState = {
      ...closedState(model),
      resumedBy: by,
      resumedAt: now,
      quietSince: now,
      updatedAt: now,
    };
    this.states.set(model, next);
    await this.writes.save(next, cur.phase, by);
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

  async view(now = this.now(), tripLimit = 100): Promise<BreakerView> {
    // An evaluation a stored verdict started (its reads run off the event
    // loop, so it may still be running) is shown once it is done.
    await this.evaluating;
    await this.tick(now);
    const c = this.cfg;
    const from = now - c.window;
    const stalls = await this.opts.store.stalls(from, now);
    const served = await this.opts.store.served(from, now, stalledSessions(stalls));
    const rates = new Map(modelRates(served, stalls, ruleOf(c), now).map((r) => [r.model, r]));
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
    return { enabled: c.enabled, window_ms: c.window, models, trips: await this.opts.store.trips(tripLimit) };
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
      ...single(
        "stallguard_breaker_write_failures_total",
        "counter",
        "Breaker state or trip writes the database refused (states are retried).",
        this.writes.failures,
      ),
    ]);
  }

  /** Ticks and evaluates periodically (unref'd); returns a stop function. */
  start(everyMs: number): () => void {
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      this.evaluate().catch((err: unknown) =>
        this.log(`breaker: evaluate failed: ${(err as Error).message}`),
      );
    }, everyMs);
    this.timer.unref?.();
    return () => clearInterval(this.timer);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
