// PagerDuty Events API v2: trigger (escalate is a trigger at critical) and
// resolve, keyed by dedup_key. The routing key comes only from an env var.
import type { ChannelConfig } from "../../../shared/index.ts";
import type { Alert, ChannelAdapter } from "../types.ts";
import { hostOf, postJson } from "./http-post.ts";
import { type Env, missingEnv, secretFromEnv } from "./secret-env.ts";
import { plainText } from "./text.ts";

export type PagerdutyConfig = Extract<ChannelConfig, { type: "pagerduty" }>;

/** The Events v2 body for one alert. A resolve carries only the key fields. */
export function pagerdutyBody(a: Alert, routingKey: string): Record<string, unknown> {
  if (a.state === "resolve")
    return { routing_key: routingKey, event_action: "resolve", dedup_key: a.dedup_key };
  return {
    routing_key: routingKey,
    event_action: "trigger",
    dedup_key: a.dedup_key,
    payload: {
      summary: plainText(`${a.title}: ${a.summary}`).slice(0, 1024),
      source: `stallguard/${a.source}`,
      severity: a.state === "escalate" ? "critical" : a.severity,
      timestamp: new Date(a.at).toISOString(),
      custom_details: {
        title: plainText(a.title),
        summary: plainText(a.summary),
        state: a.state,
        details: plainText(a.details),
      },
    },
  };
}

export function pagerdutyChannel(c: PagerdutyConfig, env: Env): ChannelAdapter {
  return {
    async deliver(alert, signal) {
      const key = secretFromEnv(env, c.routing_key_env);
      await postJson({ url: new URL(c.events_url), body: pagerdutyBody(alert, key), signal });
    },
    target() {
      return `PagerDuty Events v2 at ${hostOf(c.events_url)}, routing key from $${c.routing_key_env}`;
    },
    async diagnose() {
      return missingEnv(env, [c.routing_key_env]);
    },
  };
}
