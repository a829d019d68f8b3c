// The one schema for every knob. Pure: parses YAML text and plain objects; the
// shells read the files and the environment.
import { z } from "zod";
import { looksSecret } from "./bash-command.ts";
import { parseDuration } from "./duration.ts";
import { regexHazard } from "./regex-safety.ts";

/** A duration knob: seconds as a number, or "90s" / "5m" / "1h" / "7d". Parsed to milliseconds. */
const duration = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const ms = parseDuration(value);
  if (ms === undefined) {
    ctx.addIssue({
      code: "custom",
      message: `not a duration: ${JSON.stringify(value)} (use e.g. 90s, 5m, 1h)`,
    });
    return z.NEVER;
  }
  return ms;
});

/** The name of an environment variable that holds a secret; never the secret itself. */
const envName = z
  .string()
  .regex(/^[A-Z_][A-Z0-9_]{0,127}$/, "must name an environment variable (UPPER_SNAKE), not hold a value");

const severity = z.enum(["info", "warning", "critical"]);
export type Severity = z.infer<typeof severity>;

const portNumber = z.number().int().min(0).max(65535);
const regexSource = z
  .string()
  .max(500)
  .superRefine((s, ctx) => {
    try {
      new RegExp(s);
    } catch {
      ctx.addIssue({ code: "custom", message: "not a valid regular expression" });
      return;
    }
    const hazard = regexHazard(s);
    if (hazard) ctx.addIssue({ code: "custom", message: hazard });
  });

const SECRET_QUERY = /[?&](token|key|secret|password|auth|sig|signature|access_token|api_key)=/i;
const publicUrl = z
  .url({ protocol: /^https?$/ })
  .refine((u) => !/^[a-z]+:\/\/[^/]*@/i.test(u), {
    message: "a URL with credentials is a secret: use url_env",
  })
  .refine((u) => !SECRET_QUERY.test(u), {
    message: "a URL with a token in its query is a secret: use url_env",
  })
  .refine((u) => !/hooks\.slack\.com\/services\//.test(u), {
    message: "a Slack webhook URL is a secret: use url_env",
  })
  .refine((u) => !secretPathSegment(u), {
    message: "a URL with a token in its path is a secret: use url_env",
  });

/** A path segment shaped like a key or token (Discord and similar webhook URLs). */
function secretPathSegment(u: string): boolean {
  let path: string;
  try {
    path = new URL(u).pathname;
  } catch {
    return false;
  }
  return path.split("/").some((seg) => {
    try {
      return seg !== "" && looksSecret(decodeURIComponent(seg));
    } catch {
      return looksSecret(seg);
    }
  });
}

const channelCommon = {
  name: z.string().regex(/^[a-z0-9][a-z0-9_-]{0,39}$/, "lowercase letters, digits, _ and -"),
  enabled: z.boolean().default(true),
  min_severity: severity.default("warning"),
  /** Send a short "recovered" message on resolve (channels with a lifecycle always get the resolve). */
  resolve_messages: z.boolean().default(true),
  /** At most `count` deliveries per `per` for this channel; the rest are dropped and counted. */
  rate_limit: z
    .strictObject({ count: z.number().int().min(1).default(6), per: duration.prefault("1h") })
    .prefault({}),
  /** After an alert for a tree, further non-critical alerts for the same tree wait this long. */
  quiet_window: duration.prefault("10m"),
};

const desktopChannel = z.strictObject({
  ...channelCommon,
  type: z.literal("desktop"),
  /** notify-send binary; the router runs it with the session D-Bus from the environment. */
  command: z.string().default("notify-send"),
  app_name: z.string().default("stallguard"),
});

const webhookChannel = z
  .strictObject({
    ...channelCommon,
    type: z.literal("webhook"),
    /** Body shape: generic JSON, ntfy (JSON publish) or Slack-compatible ({text}). */
    format: z.enum(["json", "ntfy", "slack"]).default("json"),
    url: publicUrl.optional(),
    url_env: envName.optional(),
    /** Optional bearer token, read from this environment variable. */
    token_env: envName.optional(),
    /** ntfy topic (ntfy format only). */
    topic: z.string().optional(),
  })
  .refine((c) => (c.url === undefined) !== (c.url_env === undefined), {
    message: "set exactly one of url or url_env",
    path: ["url"],
  })
  .refine((c) => (c.format === "ntfy") === (c.topic !== undefined), {
    message: "format ntfy needs a topic, and only ntfy takes one",
    path: ["topic"],
  });

const pagerdutyChannel = z.strictObject({
  ...channelCommon,
  type: z.literal("pagerduty"),
  routing_key_env: envName,
  events_url: z.url({ protocol: /^https?$/ }).default("https://events.pagerduty.com/v2/enqueue"),
  min_severity: severity.default("critical"),
});

export const channelSchema = z.discriminatedUnion("type", [desktopChannel, webhookChannel, pagerdutyChannel]);
export type ChannelConfig = z.infer<typeof channelSchema>;

const modeSchema = z.enum(["warn", "auto_compact", "auto_limit_context", "auto_recover"]);
export type Mode = z.infer<typeof modeSchema>;

const DEFAULT_TEST_COMMANDS = [
  "^(python3?\\s+-m\\s+)?(pytest|py\\.test|unittest|tox|nox)\\b",
  "^python3?\\s+\\S*(test|tests|runtests)\\S*\\.py\\b",
  "^(npm|pnpm|yarn|bun)\\s+(run\\s+)?(test|lint|check|typecheck)\\b",
  "^(npx\\s+)?(vitest|jest|mocha|ava|tsc|eslint|biome|prettier\\s+--check)\\b",
  "^(go|cargo|deno|bun)\\s+(test|vet|clippy|check)\\b",
  "^make\\s+(test|check|lint)\\b",
  "^(ruff|mypy|pyright|flake8|pylint|black\\s+--check|shellcheck|rspec|phpunit|ctest)\\b",
  "^(mvn|gradle|\\./gradlew|\\./mvnw)\\s+(test|check|verify)\\b",
];

const progressSchema = z.strictObject({
  mode: modeSchema.default("warn"),
  /** Agents that never land a change by design: judged on target novelty and failure streaks. */
  read_only_agents: z
    .array(z.string().regex(/^[a-z0-9_-]{1,64}$/))
    .default(["explore", "librarian", "oracle", "metis", "momus", "multimodal-looker"]),
  /** Regexes (against a bash command with env assignments removed) that mark a test or lint run. */
  test_commands: z.array(regexSource).default(DEFAULT_TEST_COMMANDS),
  /** Texts that mark an injected continuation turn, besides synthetic parts. */
  continuation_markers: z
    .array(z.string().min(1))
    .default(["[SYSTEM DIRECTIVE: OH-MY-OPENCODE", "<!-- OMO_INTERNAL_INITIATOR -->"]),
  /** A second looping verdict in the same tree within this window is stage 2 (auto_recover). */
  recover_window: duration.prefault("60m"),
  /** Recoveries per tree per recover_window before the hard stop. Owner decision: 2. */
  max_recoveries: z.number().int().min(0).max(20).default(2),
  /** auto_limit_context: the context cap, in prompt tokens. Owner decision: 200,000. */
  context_cap: z.number().int().min(1000).default(200_000),
  /**
   * How the gate answers a refused session. Measured in real opencode
   * 1.18.33 (test/e2e/gate-opencode.test.ts, README "Refusal shape"): 403 costs
   * one request and shows the error at once; 429 costs 6 requests and ~67 s.
   * retry-after: 0 bounds the case where opencode still retries a 403 (its
   * matcher sees 429/500/502/503/504 digits in a session id) to well under 1 s.
   */
  refusal: z
    .strictObject({
      status: z.number().int().min(400).max(599).default(403),
      /** Seconds for a retry-after header; null sends none. */
      retry_after_s: z.number().int().min(0).max(86_400).nullable().default(0),
    })
    .prefault({}),
  /** How often a plugin sends its heartbeat; a plugin silent for 3 heartbeats is gone. */
  heartbeat: duration.prefault("60s"),
  /** Progress events, verdict history and request records older than this are pruned. */
  retention: duration.prefault("7d"),
});

// Every count below is judged inside one stretch without a landed change (a
// landing, a worker's landing or a person's message starts a new one). The
// defaults come from the sweep over ../shared/corpus (README "Calibration
// figures"), each from the middle of its zero-false-alarm region.
const thresholdsSchema = z.strictObject({
  /** Rolling window: the last N tool events of the current stretch. */
  window: z.number().int().min(10).max(1000).default(60),
  /** The repeat share is not judged before the window holds this many calls. */
  min_calls: z.number().int().min(1).max(1000).default(11),
  /** Stalling needs no landed change for this many turns or this many dollars... */
  stall_turns: z.number().int().min(1).default(5),
  stall_usd: z.number().min(0).default(1),
  /** ...and looping the same at these higher values. */
  loop_turns: z.number().int().min(1).default(20),
  loop_usd: z.number().min(0).default(3),
  /** Repeat share in the window: a repeat with the same result counts 1, with a changed result 1/4. */
  dup_warn: z.number().min(0).max(1).default(0.4),
  dup_loop: z.number().min(0).max(1).default(0.6),
  /** Failures of one exact call since its last success. */
  fail_warn: z.number().int().min(1).default(8),
  fail_loop: z.number().int().min(1).default(12),
  /** Changes in the window that only repeated or undid an earlier landed change. */
  flip_warn: z.number().int().min(1).default(7),
  flip_loop: z.number().int().min(1).default(12),
  /** The same call with the same result this many times in the window. */
  top_warn: z.number().int().min(2).default(7),
  top_loop: z.number().int().min(2).default(12),
  /** Repeats in a row of the same call, or of two calls in turn, each with the same result (shared/cycle.ts). */
  row_warn: z.number().int().min(2).default(5),
  row_loop: z.number().int().min(2).default(12),
  /** Whole turns in a row of a cycle of two to four calls, each with the same result (shared/cycle.ts). */
  cycle_warn: z.number().int().min(2).default(5),
  cycle_loop: z.number().int().min(2).default(10),
  /** Different calls done again in the same order with the same results, a period of 4 to 32 calls (shared/cycle.ts). */
  retrace_warn: z.number().int().min(2).default(4),
  retrace_loop: z.number().int().min(2).default(8),
  /** The same for read-only agents, which never land (TOP_MIN_RO). */
  top_ro_warn: z.number().int().min(2).default(8),
  top_ro_loop: z.number().int().min(2).default(16),
  /** Whole-session rule: one call with the same result this often since the last landing, past the window. */
  cum_warn: z.number().int().min(2).default(7),
  cum_loop: z.number().int().min(2).default(14),
  /** Read-only agents: new targets per call over a full window below this is stalling. */
  novelty_ro_warn: z.number().min(0).max(1).default(0.1),
  /** Injected continuation turns since landed that count as a repetition signal. */
  continuation_warn: z.number().int().min(1).default(3),
  /** The plain ceiling, no repeats needed: stalling at this many turns or dollars since landed. */
  ceiling_turns: z.number().int().min(1).default(300),
  ceiling_usd: z.number().min(0).default(10),
});
export type Thresholds = z.infer<typeof thresholdsSchema>;

const watchdogSchema = z.strictObject({
  enabled: z.boolean().default(true),
  interval: duration.prefault("5m"),
  local_llm_enabled: z.boolean().default(true),
  /** Model for the second opinion; null means verification.model. */
  model: z.string().nullable().default(null),
  /** null means progress.read_only_agents. */
  read_only_agents: z
    .array(z.string().regex(/^[a-z0-9_-]{1,64}$/))
    .nullable()
    .default(null),
  /** opencode server URLs to watch besides those in rc-servers.json (remote or other users' instances). */
  servers: z.array(z.url({ protocol: /^https?$/ })).default([]),
  /** opencode's own database, read-only: every local session (TUI, run, serve) without a server. */
  opencode_db: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** null: where opencode keeps it ($OPENCODE_DB, else $XDG_DATA_HOME/opencode/opencode.db). */
      path: z
        .string()
        .max(4096)
        .regex(/^\/[^\0]*$/, "must be an absolute path")
        .nullable()
        .default(null),
    })
    .prefault({}),
  /** Per-request timeout against opencode and the local model. */
  timeout: duration.prefault("5s"),
  /** Sessions updated within this long before a tick are checked on the first tick. */
  lookback: duration.prefault("30m"),
});

const pricesSchema = z.record(
  z.string(),
  z.strictObject({
    /** Dollars per million tokens. */
    prompt: z.number().min(0),
    completion: z.number().min(0),
    cached: z.number().min(0).optional(),
  }),
);

const serverSchema = z.strictObject({
  host: z.string().default("127.0.0.1"),
  port: portNumber.default(4870),
  /** SQLite file; null means $XDG_STATE_HOME/stallguard/stallguard.db. */
  db: z.string().nullable().default(null),
  /** The upstream's OpenAI base URL, ending in /v1; null disables the gate's proxy. */
  upstream: z
    .url({ protocol: /^https?$/ })
    .nullable()
    .default(null),
  upstream_api_key_env: envName.nullable().default(null),
  /** Cap on a /progress body. */
  max_progress_bytes: z.number().int().min(1024).default(65_536),
  /**
   * Per-session series on /metrics (session ids, agents, top targets) without the
   * admin token. Off: only a scrape with the admin token gets them.
   */
  public_session_metrics: z.boolean().default(false),
  /** Cap on a proxied request body. */
  max_proxy_bytes: z
    .number()
    .int()
    .min(1024)
    .default(50 * 1024 * 1024),
  upstream_timeout: duration.prefault("10m"),
  /**
   * The gate's client keys: a request to /v1 must present one as its bearer
   * token (opencode sends the provider's apiKey so). Each key is read from its
   * environment variable; the name is recorded per request. Empty: one key named
   * "default", from STALLGUARD_CLIENT_KEY or the client.key file serve creates.
   */
  client_keys: z
    .array(
      z.strictObject({
        name: z.string().regex(/^[a-z0-9_-]{1,40}$/, "lowercase [a-z0-9_-], at most 40"),
        key_env: envName,
      }),
    )
    .max(100)
    .default([])
    .refine((list) => new Set(list.map((k) => k.name)).size === list.length, {
      message: "client key names must be unique",
    }),
});

const breakerSchema = z.strictObject({
  enabled: z.boolean().default(true),
  min_sessions: z.number().int().min(1).default(3),
  window: duration.prefault("60m"),
  /** The model's stall rate must be at least this many times the other models' rate. */
  rate_ratio: z.number().min(1).default(3),
  /** Sessions the model served in the window, below which it is never tripped. */
  min_traffic: z.number().int().min(1).default(3),
  cooldown: duration.prefault("15m"),
  /** Each re-trip multiplies the cooldown by this, up to max_cooldown. */
  backoff: z.number().min(1).default(2),
  max_cooldown: duration.prefault("4h"),
  /** model -> fallback model; provider prefix ("openrouter/") -> fallback model. */
  fallbacks: z.record(z.string(), z.string()).default({}),
});

const notificationsSchema = z.strictObject({
  queue_size: z.number().int().min(1).max(10_000).default(200),
  timeout: duration.prefault("5s"),
  channels: z
    .array(channelSchema)
    .prefault([{ name: "desktop", type: "desktop" }])
    .refine((list) => new Set(list.map((c) => c.name)).size === list.length, {
      message: "channel names must be unique",
    }),
});

const pluginSchema = z.strictObject({
  /** Where the plugin reports; STALLGUARD_URL overrides; null: serve's router.json, else 127.0.0.1:4870. */
  router_url: z.nullable(z.url({ protocol: /^https?$/ })).default(null),
  token_env: envName.default("STALLGUARD_TOKEN"),
  timeout: duration.prefault("500ms"),
  /** Reports kept while the router is away (a transition is at most about 6 KB). */
  queue_size: z.number().int().min(1).max(10_000).default(1000),
  /** Idle sessions are evicted from the plugin's memory after this long. */
  idle_evict: duration.prefault("2h"),
  max_sessions: z.number().int().min(1).max(100_000).default(500),
  toasts: z.boolean().default(true),
  /**
   * After a bash call that may write, the plugin fingerprints the work tree
   * (plugin/worktree-probe.ts) off the tool path. Off: such a call lands when
   * its command writes a file and exits 0 (shared/bash-writes.ts), as in replay.
   */
  worktree_probe: z
    .strictObject({
      enabled: z.boolean().default(true),
      /** Longest one fingerprint may take; a slower tree gives no answer and the command decides. */
      timeout: duration.prefault("1500ms"),
    })
    .prefault({}),
});

export const configSchema = z.strictObject({
  server: serverSchema.prefault({}),
  prices: pricesSchema.default({}),
  progress: progressSchema.prefault({}),
  thresholds: thresholdsSchema.prefault({}),
  watchdog: watchdogSchema.prefault({}),
  verification: z
    .strictObject({
      model: z.string().default("qwen2.5-coder:14b"),
      base_url: z.url({ protocol: /^https?$/ }).default("http://127.0.0.1:11434"),
    })
    .prefault({}),
  local_compute: z.strictObject({ enabled: z.boolean().default(false) }).prefault({}),
  notifications: notificationsSchema.prefault({}),
  breaker: breakerSchema.prefault({}),
  plugin: pluginSchema.prefault({}),
});

export type Config = z.infer<typeof configSchema>;
export type ConfigInput = z.input<typeof configSchema>;

export * from "./config-parse.ts";

/** The read-only agent list the watchdog uses. */
export function watchdogReadOnlyAgents(config: Config): string[] {
  return config.watchdog.read_only_agents ?? config.progress.read_only_agents;
}

/** The model the watchdog asks for a second opinion. */
export function watchdogModel(config: Config): string {
  return config.watchdog.model ?? config.verification.model;
}
