// GET /metrics: Prometheus text exposition (version 0.0.4). Counters come
// from the database's counters table, so they survive restarts.
import type { SessionView } from "../api/schemas.ts";
import { type MetricType, metricLines, promText, type Sample } from "../prom-text.ts";
import type { MetricsSnapshot } from "../store/router-store.ts";

/** Flagged sessions that get per-session series at most (looping first); the rest are counted. */
export const WARNING_SERIES_MAX = 200;

interface MetricWriter {
  metric: (name: string, type: MetricType, help: string, samples: Sample[]) => void;
  gauge: (name: string, help: string, value: number) => void;
  /** A stored counter: unlabelled, or one sample per value of one label. */
  counter: (name: string, help: string, by?: [label: string, values: readonly string[]]) => void;
}

/** Appends series to `lines`; counters are read from the snapshot's counters table. */
function metricWriter(s: MetricsSnapshot, lines: string[]): MetricWriter {
  const metric: MetricWriter["metric"] = (name, type, help, samples) =>
    lines.push(...metricLines(name, type, help, samples));
  return {
    metric,
    gauge: (name, help, value) => metric(name, "gauge", help, [[{}, value]]),
    // A stored counter's key is the metric name without "stallguard_"; a labelled
    // one is stored per value as "<key>:<value>".
    counter: (name, help, by) => {
      const key = name.slice("stallguard_".length);
      const c = (k: string) => s.counters[k] ?? 0;
      metric(
        name,
        "counter",
        help,
        by ? by[1].map((v) => [{ [by[0]]: v }, c(`${key}:${v}`)]) : [[{}, c(key)]],
      );
    },
  };
}

/** Verdicts, flags, live plugins and what the gate refuses. */
function verdictSeries({ metric, gauge, counter }: MetricWriter, s: MetricsSnapshot): void {
  metric(
    "stallguard_sessions",
    "gauge",
    "Sessions in the store by current verdict.",
    (["ok", "stalling", "looping"] as const).map((v) => [{ verdict: v }, s.sessionsByVerdict[v]]),
  );
  counter("stallguard_warnings_total", "Transitions from ok to stalling or looping (each is a warning).", [
    "verdict",
    ["stalling", "looping"],
  ]);
  gauge(
    "stallguard_flagged_sessions",
    "Sessions currently stalling or looping.",
    s.sessionsByVerdict.stalling + s.sessionsByVerdict.looping,
  );
  counter("stallguard_transitions_total", "Verdict transitions stored, by reporter.", [
    "source",
    ["plugin", "watchdog"],
  ]);
  gauge("stallguard_live_plugins", "Plugin instances heard from within 3 heartbeats.", s.livePlugins);
  gauge("stallguard_stopped_trees", "Session trees the gate refuses now.", s.stoppedTrees);
  gauge("stallguard_stopped_sessions", "Single sessions the gate refuses now.", s.stoppedSessions);
  counter("stallguard_refusals_total", "Requests the gate refused.");
  counter(
    "stallguard_refused_conversations_total",
    "Sessions refused (once per session and refusal, however often the client retries).",
  );
  counter("stallguard_directive_results_total", "Recovery directives the plugin reported done, by outcome.", [
    "outcome",
    ["ok", "failed"],
  ]);
}

/** Reports received, alerts, admins' marks and the watchdog's last tick. */
function reportSeries({ metric, gauge, counter }: MetricWriter, s: MetricsSnapshot): void {
  counter("stallguard_progress_messages_total", "POST /progress messages accepted.");
  counter(
    "stallguard_watchdog_covered_total",
    "Watchdog transitions not stored because the session's plugin reports it (one judge per session).",
  );
  counter("stallguard_progress_duplicates_total", "Retried transitions already stored.");
  counter("stallguard_alerts_total", "Alerts handed to the notifier.");
  counter(
    "stallguard_marks_total",
    "Flagged sessions an admin marked, by kind (false_alarm, confirmed_loop).",
    ["kind", ["false_alarm", "confirmed_loop"]],
  );
  metric(
    "stallguard_marked_sessions",
    "gauge",
    "Sessions carrying an admin's mark now, by kind.",
    (["false_alarm", "confirmed_loop"] as const).map((k) => [{ kind: k }, s.marks[k]]),
  );
  gauge(
    "stallguard_watchdog_last_tick_seconds",
    "When the watchdog last reported (unix seconds; 0 = never).",
    s.lastTick ? Math.floor(s.lastTick.received_at / 1000) : 0,
  );
  gauge(
    "stallguard_watchdog_blind",
    "1 when the last watchdog tick could read no source that was there (opencode.db, a server).",
    s.lastTick?.blind ? 1 : 0,
  );
}

/**
 * Renders the store's snapshot (aggregate series, always public), then, when
 * `flagged` is given (the admin token, or server.public_session_metrics), one
 * warning series per flagged session (it names the session, agent, turns and $
 * since landed and the top repeated target, as the spec's /metrics warning
 * does), then any extra text such as the gate's.
 */
export function renderMetrics(
  s: MetricsSnapshot,
  flagged: SessionView[] | null = null,
  extra: string[] = [],
): string {
  const lines: string[] = [];
  const w = metricWriter(s, lines);
  verdictSeries(w, s);
  reportSeries(w, s);
  const shown = (flagged ?? []).filter((f) => f.verdict !== "ok").slice(0, WARNING_SERIES_MAX);
  w.gauge(
    "stallguard_warning_series_omitted",
    `Flagged sessions without a stallguard_warning series in this answer (per-session series need the admin token or server.public_session_metrics; at most ${WARNING_SERIES_MAX}).`,
    Math.max(0, s.sessionsByVerdict.stalling + s.sessionsByVerdict.looping - shown.length),
  );
  const own = flagged === null ? lines : [...lines, ...sessionSeries(shown)];
  const more = extra.filter((x) => x.trim().length > 0).map((x) => (x.endsWith("\n") ? x : `${x}\n`));
  return promText(own) + more.join("");
}

/** One warning series and three figures per flagged session. */
function sessionSeries(shown: SessionView[]): string[] {
  const lines: string[] = [];
  const metric = (name: string, help: string, samples: Sample[]) =>
    lines.push(...metricLines(name, "gauge", help, samples));
  const id = (f: SessionView) => ({ session_id: f.session_id, root_id: f.root_id });
  metric(
    "stallguard_warning",
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
  metric(
    "stallguard_warning_turns_since_landed",
    "Turns since the last landed change, per flagged session.",
    shown.map((f) => [id(f), f.turns_since_landed]),
  );
  metric(
    "stallguard_warning_usd_since_landed",
    "Dollars since the last landed change, per flagged session.",
    shown.map((f) => [id(f), f.usd_since_landed]),
  );
  metric(
    "stallguard_warning_context_tokens",
    "Latest context size, per flagged session.",
    shown.map((f) => [id(f), f.context_tokens]),
  );
  return lines;
}
