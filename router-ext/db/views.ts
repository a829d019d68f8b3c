// A stored session row as the admin API shows it (router-ext/api/schemas.ts):
// refusals joined in, turns and $ since landed from the gate's request records
// when the gate saw the session, else from the reporter, and whether it ended
// (nothing heard of it within the window a live plugin is judged by).
import type { SessionView } from "../api/schemas.ts";
import type { SessionListRow } from "./tables/sessions.ts";

export function sessionView(r: SessionListRow, opts: { now: number; liveWindowMs: number }): SessionView {
  const gate = r.g_requests > 0;
  const treeStopped = r.tree_state === "stopped";
  const sessStopped = r.sess_state === "stopped";
  return {
    session_id: r.session_id,
    parent_id: r.parent_id,
    root_id: r.root_id,
    agent: r.agent,
    verdict: r.verdict,
    worst: r.worst,
    flags: r.flags,
    stage: r.stage,
    plugin_live: r.plugin_seen_at !== null && opts.now - r.plugin_seen_at <= opts.liveWindowMs,
    plugin_headers: r.plugin_headers_at !== null && opts.now - r.plugin_headers_at <= opts.liveWindowMs,
    plugin_version: r.plugin_version,
    turns_since_landed: gate ? r.g_turns : r.turns_since_landed,
    usd_since_landed: Math.round((gate ? r.g_usd : r.usd_since_landed) * 1e6) / 1e6,
    context_tokens: gate && r.g_ctx !== null ? r.g_ctx : r.context_tokens,
    top_target: r.top_target,
    top_target_count: r.top_target_count,
    source: r.source,
    last_seen_at: r.last_seen_at,
    last_landed_at: r.last_landed_at,
    reason: r.reason,
    report: r.report,
    refused: treeStopped || sessStopped,
    stopped_by: sessStopped ? r.sess_by : treeStopped ? r.tree_by : null,
    stopped_at: sessStopped ? r.sess_at : treeStopped ? r.tree_at : null,
    spend_source: gate ? "gate" : "reporter",
    cannot_act: r.cannot_act ?? null,
    calls: r.calls,
    landed: r.landed,
    title: r.title,
    directory: r.directory,
    created_at: r.created_at,
    ended: opts.now - r.last_seen_at > opts.liveWindowMs,
    mark:
      r.mark_kind && r.mark_by !== null && r.mark_at !== null
        ? {
            kind: r.mark_kind,
            by: r.mark_by,
            at: r.mark_at,
            verdict: r.mark_verdict ?? r.verdict,
            reason: r.mark_reason,
          }
        : null,
  };
}
