// Wire messages as a plugin would send them, for tests that seed the router
// over POST /progress (counts only, like the real thing).
import type { Heartbeat, Transition, WireEvidence, WireSignals } from "../../shared/index.ts";

/** A plausible stuck session's signals; override what the test is about. */
export function signals(over: Partial<WireSignals> = {}): WireSignals {
  return {
    calls: 40,
    landed: 0,
    turns: 12,
    turns_since_landed: 12,
    calls_since_landed: 40,
    usd_since_landed: 0.42,
    usd_total: 0.42,
    dup_share: 0.6,
    ndup_share: 0.6,
    fail_streak: 0,
    context_tokens: 81_234,
    max_context_tokens: 81_234,
    novelty: 0.1,
    injected_since_landed: 0,
    flip_flops: 0,
    compactions: 0,
    read_only: false,
    last_landed_at: null,
    ...over,
  };
}

/** A looping session's evidence: `target` repeated 14 times with the same result, npm test failing. */
export function loopEvidence(target: string): WireEvidence {
  return {
    top_targets: [
      { target, count: 14 },
      { target: "bash npm test", count: 3 },
    ],
    same_result: { target, count: 14 },
    fail_target: "npm test",
  };
}

/** One session in a heartbeat: a healthy root one turn in; override what the test is about. */
export function heartbeatSession(
  id: string,
  over: Partial<Heartbeat["sessions"][number]> = {},
): Heartbeat["sessions"][number] {
  return {
    session_id: id,
    parent_id: null,
    root_id: id,
    agent: "build",
    verdict: "ok",
    turns: 1,
    turns_since_landed: 0,
    last_landed_at: null,
    context_tokens: 0,
    ...over,
  };
}

/** One verdict transition; the root defaults to the parent (one level) or the session itself. */
export function transition(
  session: string,
  parent: string | null,
  agent: string,
  previous: Transition["verdict"],
  verdict: Transition["verdict"],
  at: number,
  over: Partial<Transition> = {},
): Transition {
  return {
    type: "transition",
    id: `p:${session}:${at}:${previous[0]}${verdict[0]}`,
    source: "plugin",
    session_id: session,
    parent_id: parent,
    root_id: parent ?? session,
    agent,
    verdict,
    previous,
    reason: verdict === "ok" ? null : "repeat_target",
    signals: signals(),
    top_target: null,
    top_target_count: 0,
    report: "",
    at,
    plugin_version: "0.1.0",
    ...over,
  };
}

/** A small session's signals (10 calls, 5 turns, $0.50 since landed) for store and breaker tests. */
export const quietSignals = (over: Partial<WireSignals> = {}): WireSignals =>
  signals({
    calls: 10,
    turns: 5,
    turns_since_landed: 5,
    calls_since_landed: 10,
    usd_since_landed: 0.5,
    usd_total: 0.5,
    dup_share: 0.5,
    ndup_share: 0.5,
    context_tokens: 1000,
    max_context_tokens: 1000,
    ...over,
  });
