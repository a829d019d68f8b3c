// Every knob of the core's config schema, as the admin page's controls: the
// list is derived by walking the zod schema (kind, bounds, options), so a knob
// added to shared/config.ts shows up here without a second list. Knobs that
// cannot change while the server runs are in EXCLUDED, each with its reason;
// knobs.test.ts checks that every schema leaf is exactly one of the two.
import { type Config, configSchema, formatDuration } from "../../shared/index.ts";
import type { ExcludedKnob, KnobKind, KnobView } from "../api/schemas.ts";

export type { ExcludedKnob, KnobKind, KnobView };

/** A knob as the schema walk finds it (GET /api/knobs adds its value, default and override flag). */
export type KnobSpec = Omit<KnobView, "value" | "default" | "overridden"> & { nullable: boolean };

/** Knobs the admin page deliberately does not offer, in one place. A path ending in ".*" covers a subtree. */
export const EXCLUDED: readonly ExcludedKnob[] = [
  { path: "server.host", why: "the listen address is bound at start: use --host or config.local.yaml" },
  { path: "server.port", why: "the listen port is bound at start: use --port or config.local.yaml" },
  { path: "server.db", why: "the database file is opened at start: use --db or config.local.yaml" },
  {
    path: "server.upstream",
    why: "the gate's upstream is fixed at start: use --upstream or config.local.yaml",
  },
  {
    path: "server.upstream_api_key_env",
    why: "names the environment variable holding a secret; set it in config.local.yaml, never from a browser",
  },
  {
    path: "server.client_keys",
    why: "names the environment variables holding the gate's client keys, read at start; set it in config.local.yaml, never from a browser",
  },
  {
    path: "notifications.channels",
    why: "channels carry secret env names and are built at start; enable/disable and min_severity live on the Channels panel",
  },
  {
    path: "watchdog.opencode_db.path",
    why: "a file the watchdog opens; set it in config.local.yaml, never from a browser",
  },
  {
    path: "plugin.*",
    why: "read by the plugin inside opencode at its start (opencode.json options or STALLGUARD_CONFIG); the server cannot push it",
  },
];

const DESCRIPTIONS: Record<string, string> = {
  "server.max_progress_bytes": "Largest POST /progress body accepted; larger is 413",
  "server.max_proxy_bytes": "Largest request body the gate forwards",
  "server.public_session_metrics":
    "Per-session /metrics series (session ids, agents, targets) without the admin token",
  "server.upstream_timeout": "How long the gate waits for the upstream model endpoint",
  prices: "Model -> {prompt, completion, cached} dollars per million tokens",
  "progress.mode": "What a detection does: warn, auto_compact, auto_limit_context, auto_recover",
  "progress.read_only_agents": "Agents that never land changes by design (judged on novelty and failures)",
  "progress.test_commands": "Regexes that mark a bash command as a test or lint run",
  "progress.continuation_markers": "Texts that mark an injected continuation turn",
  "progress.recover_window": "A second detection in a tree within this window is stage 2",
  "progress.max_recoveries": "Detections per tree per window before the hard stop (auto_recover)",
  "progress.context_cap": "Context cap in prompt tokens (auto_limit_context)",
  "progress.refusal.status": "HTTP status the gate answers a refused session with",
  "progress.refusal.retry_after_s": "Retry-After seconds on a refusal; empty sends none",
  "progress.heartbeat": "Plugin heartbeat period; silent for 3 periods = plugin gone",
  "progress.retention": "History older than this is pruned",
  "thresholds.window": "Rolling window: last N tool events per session",
  "thresholds.min_calls": "Calls in the window before duplicate shares are judged",
  "thresholds.stall_turns": "Stalling: turns without a landed change",
  "thresholds.stall_usd": "Stalling: dollars without a landed change",
  "thresholds.loop_turns": "Looping: turns without a landed change",
  "thresholds.loop_usd": "Looping: dollars without a landed change",
  "thresholds.dup_warn": "Stalling: normalized duplicate share in the window",
  "thresholds.dup_loop": "Looping: normalized duplicate share in the window",
  "thresholds.fail_warn": "Stalling: consecutive failures of one call",
  "thresholds.fail_loop": "Looping: consecutive failures of one call",
  "thresholds.flip_warn": "Stalling: changes that only repeat or undo a landed change",
  "thresholds.flip_loop": "Looping: changes that only repeat or undo a landed change",
  "thresholds.top_warn": "Stalling: count of the most repeated call in the window",
  "thresholds.top_loop": "Looping: count of the most repeated call in the window",
  "thresholds.row_warn":
    "Stalling: repeats in a row of one call, or two calls in turn, with the same results",
  "thresholds.row_loop": "Looping: repeats in a row of one call, or two calls in turn, with the same results",
  "thresholds.cycle_warn": "Stalling: whole turns in a row of 2 to 4 calls going round with the same results",
  "thresholds.cycle_loop": "Looping: whole turns in a row of 2 to 4 calls going round with the same results",
  "thresholds.retrace_warn":
    "Stalling: different calls redone in the same order with the same results (a sweep of 4 to 32 calls)",
  "thresholds.retrace_loop":
    "Looping: different calls redone in the same order with the same results (read-only agents: stalling)",
  "thresholds.top_ro_warn": "Stalling, read-only agents: most repeated call count",
  "thresholds.top_ro_loop": "Looping, read-only agents: most repeated call count",
  "thresholds.cum_warn": "Stalling: one exact call repeated this often since landed",
  "thresholds.cum_loop": "Looping: one exact call repeated this often since landed",
  "thresholds.novelty_ro_warn": "Read-only agents: new targets per call below this is stalling",
  "thresholds.continuation_warn": "Injected continuation turns since landed that count as a signal",
  "thresholds.ceiling_turns": "Plain ceiling: stalling at this many turns since landed",
  "thresholds.ceiling_usd": "Plain ceiling: stalling at this many dollars since landed",
  "watchdog.enabled": "Run the watchdog loop in the server (when no systemd timer is installed)",
  "watchdog.interval": "Time between watchdog ticks",
  "watchdog.local_llm_enabled": "Ask the local model for a second opinion on flagged sessions",
  "watchdog.model": "Second-opinion model; empty uses verification.model",
  "watchdog.read_only_agents": "Read-only agents for the watchdog; empty uses progress.read_only_agents",
  "watchdog.servers": "opencode server URLs to watch besides rc-servers.json",
  "watchdog.opencode_db.enabled": "Read opencode's own database (every local session) read-only",
  "watchdog.timeout": "Per-request timeout against opencode and the local model",
  "watchdog.lookback": "Sessions updated this long before the first tick are checked",
  "verification.model": "Local verification model",
  "verification.base_url": "Local model server base URL",
  "local_compute.enabled": "Allow local model inference (off keeps gaming mode honest)",
  "notifications.queue_size": "Alerts queued for delivery before the oldest are dropped",
  "notifications.timeout": "Per-delivery timeout",
  "breaker.enabled": "Trip a model whose sessions stall far more often than others",
  "breaker.min_sessions": "Stalled trees needed to trip a model",
  "breaker.window": "Window the stall rates are measured over",
  "breaker.rate_ratio": "Trip when a model's stall rate is this many times the others'",
  "breaker.min_traffic": "Trees a model served in the window below which it is never tripped",
  "breaker.cooldown": "First cooldown of a tripped model",
  "breaker.backoff": "Each re-trip multiplies the cooldown by this",
  "breaker.max_cooldown": "Longest cooldown",
  "breaker.fallbacks": "Model or provider prefix -> fallback model",
};

interface Node {
  _zod: {
    def: {
      type: string;
      shape?: Record<string, Node>;
      innerType?: Node;
      in?: Node;
      out?: Node;
      entries?: Record<string, string | number>;
      options?: Node[];
    };
  };
  minValue?: number | null;
  maxValue?: number | null;
  isInt?: boolean;
}

function finite(n: number | null | undefined): number | undefined {
  return typeof n === "number" && Number.isFinite(n) && Math.abs(n) < Number.MAX_SAFE_INTEGER ? n : undefined;
}

function leafSpec(path: string, node: Node, nullable: boolean): KnobSpec {
  const def = node._zod.def;
  const base = { path, nullable, description: DESCRIPTIONS[path] ?? "" };
  switch (def.type) {
    case "boolean":
      return { ...base, kind: "boolean" };
    case "string":
      return { ...base, kind: "string" };
    case "enum":
      return { ...base, kind: "enum", options: Object.values(def.entries ?? {}).map(String) };
    case "number": {
      const min = finite(node.minValue);
      const max = finite(node.maxValue);
      return {
        ...base,
        kind: node.isInt ? "integer" : "number",
        ...(min !== undefined ? { min } : {}),
        ...(max !== undefined ? { max } : {}),
      };
    }
    case "pipe":
      // The core's duration: number-or-string in, milliseconds out.
      if (def.out?._zod.def.type === "transform" && def.in?._zod.def.type === "union")
        return { ...base, kind: "duration", min: 0 };
      return { ...base, kind: "json" };
    case "array":
      return { ...base, kind: "list" };
    default:
      return { ...base, kind: "json" };
  }
}

function walk(node: Node, path: string, nullable: boolean, out: KnobSpec[]): void {
  const def = node._zod.def;
  if (def.type === "object" && def.shape) {
    for (const [key, child] of Object.entries(def.shape))
      walk(child, path ? `${path}.${key}` : key, false, out);
    return;
  }
  if ((def.type === "default" || def.type === "prefault" || def.type === "optional") && def.innerType) {
    walk(def.innerType, path, nullable, out);
    return;
  }
  if (def.type === "nullable" && def.innerType) {
    walk(def.innerType, path, true, out);
    return;
  }
  out.push(leafSpec(path, node, nullable));
}

/** Every leaf of the config schema with its kind and bounds, excluded ones included. */
export function schemaLeaves(): KnobSpec[] {
  const out: KnobSpec[] = [];
  walk(configSchema as unknown as Node, "", false, out);
  return out;
}

/** Whether a path is in EXCLUDED (directly or under an excluded subtree). */
export function isExcluded(path: string): boolean {
  return EXCLUDED.some((e) =>
    e.path.endsWith(".*")
      ? path.startsWith(e.path.slice(0, -1)) || path === e.path.slice(0, -2)
      : path === e.path,
  );
}

/** The knob list the admin page offers. */
export const KNOB_SPECS: readonly KnobSpec[] = schemaLeaves().filter((k) => !isExcluded(k.path));

export function knobSpec(path: string): KnobSpec | undefined {
  return KNOB_SPECS.find((k) => k.path === path);
}

/** Reads a dotted path out of a config (or any nested object). */
export function getPath(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const key of path.split(".")) {
    if (typeof cur !== "object" || cur === null || Array.isArray(cur)) return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** A knob's value in the form PUT accepts back: durations as "5m", everything else as is. */
export function displayValue(spec: KnobSpec, value: unknown): unknown {
  if (spec.kind === "duration" && typeof value === "number") return formatDuration(value);
  return value;
}

const DEFAULTS: Config = configSchema.parse({});

/** The knob list with current values and defaults. */
export function knobViews(config: Config, overridden: ReadonlySet<string>): KnobView[] {
  return KNOB_SPECS.map((spec) => ({
    ...spec,
    value: displayValue(spec, getPath(config, spec.path)),
    default: displayValue(spec, getPath(DEFAULTS, spec.path)),
    overridden: overridden.has(spec.path),
  }));
}

/** EXCLUDED expanded to the concrete schema leaves it covers, for the admin page's list. */
export function excludedLeaves(): ExcludedKnob[] {
  return schemaLeaves()
    .filter((k) => isExcluded(k.path))
    .map((k) => ({
      path: k.path,
      why:
        EXCLUDED.find((e) => e.path === k.path)?.why ??
        EXCLUDED.find((e) => e.path.endsWith(".*") && k.path.startsWith(e.path.slice(0, -1)))?.why ??
        "",
    }));
}
