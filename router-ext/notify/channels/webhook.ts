// Generic webhook: a JSON POST in one of three body shapes (generic, ntfy's
// JSON publish, Slack-compatible {text}). URL from config or an env var;
// optional bearer token from an env var.
import type { ChannelConfig } from "../../../shared/index.ts";
import type { Alert, ChannelAdapter } from "../types.ts";
import { hostOf, postJson } from "./http-post.ts";
import { DeliveryError, type Env, missingEnv, secretFromEnv, urlFromEnv } from "./secret-env.ts";
import { plainText, slackCode, slackText } from "./text.ts";

export type WebhookConfig = Extract<ChannelConfig, { type: "webhook" }>;

const NTFY_PRIORITY = { info: 3, warning: 4, critical: 5 } as const;
const NTFY_TAG = { info: "information_source", warning: "warning", critical: "rotating_light" } as const;

function clip(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max - 3)}...` : s;
}

/** The generic JSON body: the alert as it is. */
export function jsonBody(a: Alert): Record<string, unknown> {
  return {
    dedup_key: a.dedup_key,
    severity: a.severity,
    state: a.state,
    title: plainText(a.title),
    summary: plainText(a.summary),
    details: plainText(a.details),
    source: a.source,
    at: a.at,
  };
}

/** ntfy JSON publish body (POST to the server root URL). */
export function ntfyBody(a: Alert, topic: string): Record<string, unknown> {
  const resolved = a.state === "resolve";
  return {
    topic,
    title: plainText(a.title),
    // ntfy shows message as plain text unless asked for markdown (it is not).
    message: clip(plainText(a.details ? `${a.summary}\n\n${a.details}` : a.summary), 3500),
    priority: resolved ? 3 : NTFY_PRIORITY[a.severity],
    tags: [resolved ? "white_check_mark" : NTFY_TAG[a.severity], a.source],
  };
}

/** Slack-compatible incoming-webhook body. */
export function slackBody(a: Alert): { text: string } {
  const details = a.details ? `\n\`\`\`${slackCode(clip(a.details, 2500))}\`\`\`` : "";
  return { text: `*${slackText(a.title)}*\n${slackText(a.summary)}${details}` };
}

export function webhookBody(c: WebhookConfig, a: Alert): unknown {
  if (c.format === "slack") return slackBody(a);
  if (c.format === "ntfy") {
    if (!c.topic) throw new DeliveryError("format ntfy needs a topic");
    return ntfyBody(a, c.topic);
  }
  return jsonBody(a);
}

export function webhookChannel(c: WebhookConfig, env: Env): ChannelAdapter {
  return {
    async deliver(alert, signal) {
      const url = c.url_env ? urlFromEnv(env, c.url_env) : new URL(c.url ?? "");
      const headers: Record<string, string> = {};
      if (c.token_env) headers.authorization = `Bearer ${secretFromEnv(env, c.token_env)}`;
      await postJson({ url, body: webhookBody(c, alert), headers, signal });
    },
    target() {
      const where = c.url_env ? `url from $${c.url_env}` : hostOf(c.url ?? "");
      return `${c.format} webhook, ${where}${c.token_env ? `, token from $${c.token_env}` : ""}`;
    },
    async diagnose() {
      const problems = missingEnv(env, [c.url_env, c.token_env]);
      if (c.format === "ntfy" && !c.topic) problems.push("format ntfy needs a topic");
      return problems;
    },
  };
}
