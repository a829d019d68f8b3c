// The behaviour breaker's trip rule (spec section 8), pure. A model is tripped
// when stall verdicts on trees it served during their stall windows span at
// least min_sessions distinct trees in the window AND its stall rate is well
// above the rate of the other models on the same window's traffic.
//
// Units are trees (root sessions), not sessions: an orchestrator and its three
// stuck workers are one hard task, and one hard task must not blame a model.
// The other models' rate is smoothed, (stalled + 0.5) / (served + 1), so a
// model is never tripped without comparison traffic and a clean comparison
// model does not make any single stall infinitely suspicious.

export interface ServedRecord {
  model: string;
  sessionId: string;
  rootId: string;
  at: number;
}

export interface StallRecord {
  sessionId: string;
  rootId: string;
  verdict: "stalling" | "looping";
  /** When the verdict arrived. */
  at: number;
  /** Start of the stall window: the last landed change, or when the session started. */
  since: number;
}

/** That a model served a tree (a root session) in the window: one per model and tree is enough. */
export interface ServedTree {
  model: string;
  rootId: string;
}

/**
 * What the rule weighs of the window's traffic: the trees each model served
 * (in the window), and the requests of the sessions stalled in it (which
 * models served each stall, and when). A busy router's window holds every
 * request of the last hour: the store reads these two, not all of them.
 */
export interface ServedEvidence {
  trees: readonly ServedTree[];
  /** Requests of the stalled sessions; any others are ignored. */
  requests: readonly ServedRecord[];
}

/** The evidence in the window ending at `now` from whole request records (what the store reads, from a list). */
export function evidenceOf(served: readonly ServedRecord[], rule: TripRule, now: number): ServedEvidence {
  const from = now - rule.windowMs;
  const inWindow = served.filter((r) => r.at >= from && r.at <= now);
  return { trees: inWindow, requests: inWindow };
}

export interface TripRule {
  minSessions: number;
  windowMs: number;
  rateRatio: number;
  minTraffic: number;
}

export interface ModelRate {
  model: string;
  servedTrees: number;
  stalledTrees: number;
  rate: number;
  othersServed: number;
  othersStalled: number;
  othersRate: number;
  ratio: number;
  trip: boolean;
  /** The flagged sessions this model served in their stall window (the evidence). */
  evidence: Array<{ sessionId: string; rootId: string; verdict: "stalling" | "looping"; at: number }>;
}

/**
 * Whether any model could trip on these stalls: a model's stalled trees are
 * some of the distinct trees stalled in the window, so with fewer than
 * min_sessions of them none trips, whatever was served. Lets the caller skip
 * reading the window's requests (every request of the last hour on a busy
 * router) when it cannot matter.
 */
export function mayTrip(stalls: readonly StallRecord[], rule: TripRule, now: number): boolean {
  const from = now - rule.windowMs;
  const trees = new Set<string>();
  for (const s of stalls) {
    if (s.at < from || s.at > now) continue;
    trees.add(s.rootId);
    if (trees.size >= rule.minSessions) return true;
  }
  return false;
}

/** Per-model stall rates over the window ending at `now`, with the trip decision. */
export function modelRates(
  served: ServedEvidence,
  stalls: readonly StallRecord[],
  rule: TripRule,
  now: number,
): ModelRate[] {
  const from = now - rule.windowMs;
  const servedBy = new Map<string, Set<string>>();
  for (const r of served.trees) {
    let trees = servedBy.get(r.model);
    if (!trees) {
      trees = new Set();
      servedBy.set(r.model, trees);
    }
    trees.add(r.rootId);
  }
  const requestsOf = new Map<string, ServedRecord[]>();
  for (const r of served.requests) {
    if (r.at < from || r.at > now) continue;
    const list = requestsOf.get(r.sessionId);
    if (list) list.push(r);
    else requestsOf.set(r.sessionId, [r]);
  }
  // A stall is attributed to every model that served that session inside its stall window.
  const stalledBy = new Map<string, Map<string, ModelRate["evidence"][number]>>();
  for (const s of stalls) {
    if (s.at < from || s.at > now) continue;
    const models = new Set(
      (requestsOf.get(s.sessionId) ?? []).filter((r) => r.at >= s.since && r.at <= s.at).map((r) => r.model),
    );
    for (const m of models) {
      let ev = stalledBy.get(m);
      if (!ev) {
        ev = new Map();
        stalledBy.set(m, ev);
      }
      const prev = ev.get(s.sessionId);
      if (!prev || (prev.verdict === "stalling" && s.verdict === "looping"))
        ev.set(s.sessionId, { sessionId: s.sessionId, rootId: s.rootId, verdict: s.verdict, at: s.at });
    }
  }
  const stalledTreesOf = (m: string) => new Set([...(stalledBy.get(m)?.values() ?? [])].map((e) => e.rootId));
  const models = [...servedBy.keys()].sort();
  const out: ModelRate[] = [];
  for (const m of models) {
    const servedTrees = servedBy.get(m)?.size ?? 0;
    const stalledTrees = stalledTreesOf(m).size;
    let othersServed = 0;
    let othersStalled = 0;
    for (const o of models) {
      if (o === m) continue;
      othersServed += servedBy.get(o)?.size ?? 0;
      othersStalled += stalledTreesOf(o).size;
    }
    const rate = servedTrees > 0 ? stalledTrees / servedTrees : 0;
    const othersRate = (othersStalled + 0.5) / (othersServed + 1);
    const ratio = rate / othersRate;
    const trip =
      stalledTrees >= rule.minSessions &&
      servedTrees >= rule.minTraffic &&
      othersServed > 0 &&
      ratio >= rule.rateRatio;
    out.push({
      model: m,
      servedTrees,
      stalledTrees,
      rate,
      othersServed,
      othersStalled,
      othersRate,
      ratio,
      trip,
      evidence: [...(stalledBy.get(m)?.values() ?? [])].sort((a, b) => a.at - b.at),
    });
  }
  return out;
}
