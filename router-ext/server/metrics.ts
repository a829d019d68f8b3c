// GET /metrics: Prometheus text exposition (version 0.0.4). Counters come
// from the database's counters table, so they survive restarts.
import type { MetricsSnapshot, SessionView } from "../db/store.ts";

function esc(v: string): string {
  return v.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');
}

class Text {
  private readonly lines: string[] = [];
  metric(
    name: string,
    type: "gauge" | "counter",
    help: string,
    samples: Array<[Record<string, string>, number]>,
  ) {
    this.lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    for (const [labels, value] of samples) {
      const l = Object.entries(labels)
        .map(([k, v]) => `${k}="${esc(v)}"`)
        .join(",");
      this.lines.push(`${name}${l ? `{${l}}` : ""} ${Number.isFinite(value) ? value : 0}`);
    }
  }
  toString(): string {
    return `${this.lines.join("\n")}\n`;
  }
}

/**
 * Renders the store's snapshot, one warning series per flagged session (it names
 * the session, agent, turns and $ since landed and the top repeated target, as
 * the spec's /metrics warning does), then any extra text such as the gate's.
 */
export function renderMetrics(s: MetricsSnapshot, flagged: SessionView[] = [], extra: string[] = []): string {
  const t = new Text();
  const c = (name: string) => s.counters[name] ?? 0;
  t.metric(
    "stallguard_sessions",
    "gauge",
    "Sessions in the store by current verdict.",
    (["ok", "stalling", "looping"] as const).map((v) => [{ verdict: v }, s.sessionsByVerdict[v]]),
  );
  const byLabel = (label: string, values: readonly string[], prefix: string) =>
    values.map((v): [Record<string, string>, number] => [{ [label]: v }, c(`${prefix}:${v}`)]);
  t.metric(
    "stallguard_warnings_total",
    "counter",
    "Transitions from ok to stalling or looping (each is a warning).",
    byLabel("verdict", ["stalling", "looping"], "warnings_total"),
  );
  t.metric("stallguard_flagged_sessions", "gauge", "Sessions currently stalling or looping.", [
    [{}, s.sessionsByVerdict.stalling + s.sessionsByVerdict.looping],
  ]);
  t.metric(
    "stallguard_transitions_total",
    "counter",
    "Verdict transitions stored, by reporter.",
    byLabel("source", ["plugin", "watchdog"], "transitions_total"),
  );
  t.metric("stallguard_live_plugins", "gauge", "Plugin instances heard from within 3 heartbeats.", [
    [{}, s.livePlugins],
  ]);
  t.metric("stallguard_stopped_trees", "gauge", "Session trees the gate refuses now.", [
    [{}, s.stoppedTrees],
  ]);
  t.metric("stallguard_stopped_sessions", "gauge", "Single sessions the gate refuses now.", [
    [{}, s.stoppedSessions],
  ]);
  t.metric("stallguard_refusals_total", "counter", "Requests the gate refused.", [[{}, c("refusals_total")]]);
  t.metric(
    "stallguard_refused_conversations_total",
    "counter",
    "Conversations refused (once per conversation and refusal, however often the client retries).",
    [[{}, c("refused_conversations_total")]],
  );
  t.metric(
    "stallguard_directive_results_total",
    "counter",
    "Recovery directives the plugin reported done, by outcome.",
    byLabel("outcome", ["ok", "failed"], "directive_results_total"),
  );
  t.metric("stallguard_progress_messages_total", "counter", "POST /progress messages accepted.", [
    [{}, c("progress_messages_total")],
  ]);
  t.metric("stallguard_progress_duplicates_total", "counter", "Retried transitions already stored.", [
    [{}, c("progress_duplicates_total")],
  ]);
  t.metric("stallguard_alerts_total", "counter", "Alerts handed to the notifier.", [[{}, c("alerts_total")]]);
  t.metric(
    "stallguard_marks_total",
    "counter",
    "Flagged sessions an admin marked, by kind (false_alarm, confirmed_loop).",
    byLabel("kind", ["false_alarm", "confirmed_loop"], "marks_total"),
  );
  t.metric(
    "stallguard_marked_sessions",
    "gauge",
    "Sessions carrying an admin's mark now, by kind.",
    (["false_alarm", "confirmed_loop"] as const).map((k) => [{ kind: k }, s.marks[k]]),
  );
  t.metric(
    "stallguard_watchdog_last_tick_seconds",
    "gauge",
    "When the watchdog last reported (unix seconds; 0 = never).",
    [[{}, s.lastTick ? Math.floor(s.lastTick.received_at / 1000) : 0]],
  );
  t.metric("stallguard_watchdog_blind", "gauge", "1 when the last watchdog tick found no opencode server.", [
    [{}, s.lastTick?.blind ? 1 : 0],
  ]);
  const shown = flagged.filter((f) => f.verdict !== "ok").slice(0, 200);
  const id = (f: SessionView) => ({ session_id: f.session_id, root_id: f.root_id });
  t.metric(
    "stallguard_warning",
    "gauge",
    "1 per session flagged now, labelled with its agent, verdict, reason and top repeated target.",
    shown.map((f) => [
      {
        ...id(f),
        agent: f.agent ?? "",
        verdict: f.verdict,
        reason: f.reason ?? "",
        stage: f.stage,
        top_target: f.top_target ?? "",
        top_target_count: String(f.top_target_count),
      },
      1,
    ]),
  );
  t.metric(
    "stallguard_warning_turns_since_landed",
    "gauge",
    "Turns since the last landed change, per flagged session.",
    shown.map((f) => [id(f), f.turns_since_landed]),
  );
  t.metric(
    "stallguard_warning_usd_since_landed",
    "gauge",
    "Dollars since the last landed change, per flagged session.",
    shown.map((f) => [id(f), f.usd_since_landed]),
  );
  t.metric(
    "stallguard_warning_context_tokens",
    "gauge",
    "Latest context size, per flagged session.",
    shown.map((f) => [id(f), f.context_tokens]),
  );
  const own = t.toString();
  const more = extra.filter((x) => x.trim().length > 0).map((x) => (x.endsWith("\n") ? x : `${x}\n`));
  return own + more.join("");
}
