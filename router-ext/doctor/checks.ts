// `stallguard doctor`'s judgement: one pure check per link of the chain, in
// the order a user sets it up, each with what it found and, on failure, the
// fix. `needed` says whether the chosen mode depends on the link; a failure
// of a needed link makes the exit status non-zero.
import { formatDuration, type Mode } from "../../shared/index.ts";
import { blindDetail, tickBlind, tickReadout } from "../watchdog/readout.ts";
import type { DoctorFacts } from "./facts.ts";
import { keyForm, layeredProviders, resolveFileRef, sameEndpoint } from "./opencode-config.ts";
import { checkPgStore } from "./pg-checks.ts";
import { checkReporting } from "./reporting-check.ts";

export interface CheckResult {
  id: string;
  status: "pass" | "fail" | "skip";
  /** The chosen mode needs this link. */
  needed: boolean;
  detail: string;
  fix: string | null;
}

const pass = (id: string, needed: boolean, detail: string): CheckResult => ({
  id,
  status: "pass",
  needed,
  detail,
  fix: null,
});
const fail = (id: string, needed: boolean, detail: string, fix: string): CheckResult => ({
  id,
  status: "fail",
  needed,
  detail,
  fix,
});
const skip = (id: string, needed: boolean, detail: string): CheckResult => ({
  id,
  status: "skip",
  needed,
  detail,
  fix: null,
});

/** A rough age: "42s", "12m", "3h". */
function age(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s}s`;
  if (s < 90 * 60) return `${Math.round(s / 60)}m`;
  return `${Math.round(s / 3600)}h`;
}

/** Modes whose refusals and caps are the gate's: they need opencode's provider pointed at it. */
const GATE_MODES: readonly Mode[] = ["auto_limit_context", "auto_recover"];
const needsGate = (f: DoctorFacts) => GATE_MODES.includes(f.mode);

export function checkOpencode(f: DoctorFacts): CheckResult {
  const o = f.opencode;
  if (!o.path)
    return fail(
      "opencode",
      true,
      "opencode not found on PATH",
      "install it (npm install -g opencode-ai) or put it on PATH",
    );
  if (!o.version)
    return fail(
      "opencode",
      true,
      `${o.path} did not say its version: ${o.error ?? "no output"}`,
      "run opencode --version yourself and reinstall it if it fails",
    );
  return pass("opencode", true, `opencode ${o.version} (${o.path})`);
}

/** What the plugin's version is compared with: the router's, or (down, or run from source) this stallguard's. */
function versionRef(f: DoctorFacts): { version: string; same: string; but: string } {
  const pkg = f.packageVersion ?? f.expectedVersion;
  const mine = (why: string) => ({
    version: pkg,
    same: `this stallguard ${pkg} (${why})`,
    but: `this stallguard is ${pkg} (${why})`,
  });
  if (!f.router.ok) return mine("the router's version is unknown: not reachable");
  if (f.router.health.version === "dev") return mine("the router runs from source: dev");
  return { version: f.expectedVersion, same: "the router", but: `the router is ${f.expectedVersion}` };
}

export function checkPlugin(f: DoctorFacts): CheckResult {
  const install = "stallguard install-plugin (or --project DIR), then restart opencode";
  if (f.plugins.length === 0)
    return fail("plugin", true, `no stallguard plugin in ${f.pluginDirs.join(" or ")}`, install);
  if (f.plugins.length > 1)
    return fail(
      "plugin",
      true,
      `${f.plugins.length} copies load: ${f.plugins.map((p) => `${p.path} (${p.version ?? "?"})`).join(", ")}`,
      "keep one: remove the others, then restart opencode",
    );
  const p = f.plugins[0] as (typeof f.plugins)[number];
  const ref = versionRef(f);
  if (p.version !== ref.version)
    return fail(
      "plugin",
      true,
      `plugin ${p.version ?? "of unknown version"} at ${p.path} (${p.scope}), but ${ref.but}`,
      install,
    );
  return pass("plugin", true, `plugin ${p.version} at ${p.path} (${p.scope}), same as ${ref.same}`);
}

/** The provider's key as the router judged it: a fail when refused, else the words for the pass line. */
function keyVerdict(f: DoctorFacts, id: string, form: string, needed: boolean): CheckResult | string {
  const k = f.keyCheck;
  if (!k) return "";
  if (k.state === "accepted") return `, accepted by the router as client ${k.client}`;
  if (k.state === "unchecked") return `, not checked against the router: ${k.why}`;
  return fail(
    "provider",
    needed,
    `provider ${id}'s apiKey (${form}) is not one of the gate's client keys: the router answered ${k.status}`,
    'set "apiKey": "{file:~/.config/stallguard/client.key}" (the key stallguard serve wrote), or a key named in server.client_keys',
  );
}

export function checkProvider(f: DoctorFacts): CheckResult {
  const needed = needsGate(f);
  const c = f.opencodeConfig;
  const broken = c.files.find((x) => x.error);
  if (broken)
    return fail("provider", needed, `cannot read ${broken.path}: ${broken.error}`, "fix the file's JSON");
  const gate = `${f.routerUrl.replace(/\/+$/, "")}/v1`;
  const { providers, model } = layeredProviders(c.files, c.env);
  const snippet = `"provider": {"stallguard": {"npm": "@ai-sdk/openai-compatible", "options": {"baseURL": "${gate}", "apiKey": "{file:~/.config/stallguard/client.key}"}}}`;
  const atGate = providers.filter((p) => p.baseURL !== null && sameEndpoint(p.baseURL, gate));
  if (atGate.length === 0) {
    const seen = providers.map((p) => `${p.id} -> ${p.baseURL ?? "(no baseURL)"}`).join(", ");
    return fail(
      "provider",
      needed,
      `no provider in opencode.json points at the gate ${gate}${seen ? ` (found: ${seen})` : c.files.length ? "" : " (no opencode.json found)"}`,
      `in opencode.json: ${snippet}`,
    );
  }
  const p = atGate[0] as (typeof atGate)[number];
  if (model && !atGate.some((x) => model.startsWith(`${x.id}/`)))
    return fail(
      "provider",
      needed,
      `provider ${p.id} points at the gate, but "model" is ${model}, which does not go through it`,
      `set "model" to "${p.id}/<model>" in opencode.json`,
    );
  const key = keyForm(p.apiKey);
  if (key.kind === "missing")
    return fail(
      "provider",
      needed,
      `provider ${p.id} (${gate}) has no apiKey`,
      `add "apiKey": "{file:~/.config/stallguard/client.key}" to its options`,
    );
  if (key.kind === "env" && !c.env[key.name])
    return fail(
      "provider",
      needed,
      `provider ${p.id}'s apiKey reads {env:${key.name}}, which is not set here`,
      `export ${key.name} where opencode starts, or use "{file:~/.config/stallguard/client.key}"`,
    );
  if (key.kind === "file") {
    const path = resolveFileRef(key.path, p.file, c.home);
    const state = c.fileRefs[path] ?? "missing";
    if (state !== "readable")
      return fail(
        "provider",
        needed,
        `provider ${p.id}'s apiKey file ${path} is ${state} (opencode refuses to start)`,
        "start stallguard serve once (it writes the key file), or write the key there with mode 0600",
      );
  }
  const form =
    key.kind === "literal"
      ? "a literal key"
      : key.kind === "env"
        ? `{env:${key.name}}`
        : `{file:${key.path}}`;
  const judged = keyVerdict(f, p.id, form, needed);
  if (typeof judged !== "string") return judged;
  return pass("provider", needed, `provider ${p.id} -> ${gate}, key from ${form}${judged}`);
}

export function checkRouter(f: DoctorFacts): CheckResult {
  if (!f.router.ok) {
    const from = f.routerFrom && f.routerFrom !== "from --router" ? ` (the URL is ${f.routerFrom})` : "";
    return fail(
      "router",
      true,
      `router not reachable at ${f.routerUrl}: ${f.router.error}${from}`,
      "start it: stallguard serve, or systemctl --user start stallguard.service (STALLGUARD_URL if it listens elsewhere)",
    );
  }
  const h = f.router.health;
  if (h.db !== "ok")
    return fail("router", true, `router ${h.version} answers, database: ${h.db}`, "see the router's log");
  if (h.db_writable === false)
    return fail(
      "router",
      true,
      `router ${h.version} answers, but its database does not take writes`,
      "make the database file and its directory writable by the router's user (default ~/.local/state/stallguard/)",
    );
  const live = h.plugins_live === undefined ? "" : `, ${h.plugins_live} plugin(s) live`;
  return pass(
    "router",
    true,
    `router ${h.version} at ${f.routerUrl}, database writable, mode ${h.mode}${live}`,
  );
}

export function checkSecrets(f: DoctorFacts): CheckResult[] {
  return f.secrets.map((s) => {
    const id = s.file;
    const needed = s.file !== "client.key" || needsGate(f);
    if (s.envSet) return pass(id, needed, `${s.file}: from ${s.env}`);
    if (s.state === "missing")
      return fail(
        id,
        needed,
        `${s.path} does not exist and ${s.env} is not set`,
        `start stallguard serve once (it creates ${s.file}), or set ${s.env}`,
      );
    if (s.state === "unreadable")
      return fail(id, needed, `${s.path} cannot be read`, `chown it to your user and chmod 600 ${s.path}`);
    if (s.mode !== null && (s.mode & 0o077) !== 0)
      return fail(
        id,
        needed,
        `${s.path} is open to others (mode ${s.mode.toString(8).padStart(3, "0")})`,
        `chmod 600 ${s.path}`,
      );
    return pass(id, needed, `${s.path} readable, mode 600`);
  });
}

export function checkUpstream(f: DoctorFacts): CheckResult {
  const u = f.upstream;
  if (!u) return skip("upstream", false, "not checked (add --upstream to send a models request)");
  if (!u.url)
    return fail(
      "upstream",
      true,
      "server.upstream is not set: the gate answers 503",
      "set server.upstream (the model endpoint's /v1 URL) and server.upstream_api_key_env in config/config.local.yaml",
    );
  if (!u.ok)
    return fail(
      "upstream",
      true,
      `${u.url}: ${u.detail}`,
      "check server.upstream and the key in the variable server.upstream_api_key_env names",
    );
  return pass("upstream", true, `${u.url}: ${u.detail}`);
}

/**
 * A desktop channel is optional in every mode (the page, /metrics and the
 * plugin's toast warn too): a missing D-Bus is a warning that says how to
 * reach the bus, or how to switch the channel off.
 */
export function checkDesktop(f: DoctorFacts): CheckResult {
  const d = f.desktop;
  if (!d.enabled) return skip("dbus", false, "no desktop channel enabled");
  const name = d.channels?.[0] ?? "desktop";
  if (d.problems.length)
    return fail(
      "dbus",
      false,
      d.problems[0] as string,
      `run inside your desktop session, or set DBUS_SESSION_BUS_ADDRESS=unix:path=$XDG_RUNTIME_DIR/bus (the systemd units set it); on a machine without a desktop turn the channel off: in ${f.localConfig ?? "config/config.local.yaml"}, notifications.channels: [{ name: ${name}, type: desktop, enabled: false }] (the key is notifications.channels[].enabled)`,
    );
  return pass("dbus", false, "the session bus answers (desktop alerts can be shown)");
}

export function checkUnits(f: DoctorFacts): CheckResult {
  const u = f.units;
  const enable =
    "stallguard install-units --enable (or: systemctl --user enable --now stallguard.service stallguard-watchdog.timer)";
  if (u.installed.length === 0)
    return fail(
      "units",
      false,
      `no systemd user units in ${u.dir} (fine while you run stallguard serve yourself)`,
      `for unattended machines: ${enable}`,
    );
  if (u.missing.length) return fail("units", true, `${u.missing.join(", ")} missing from ${u.dir}`, enable);
  if (u.active === null)
    return fail(
      "units",
      false,
      `installed in ${u.dir}; systemctl --user did not answer, so whether they run is unknown`,
      "check with systemctl --user status stallguard.service stallguard-watchdog.timer",
    );
  const down = ["stallguard.service", "stallguard-watchdog.timer"].filter((n) => u.active?.[n] !== "active");
  if (down.length)
    return fail(
      "units",
      true,
      `installed but not active: ${down.map((n) => `${n} (${u.active?.[n] ?? "unknown"})`).join(", ")}`,
      enable,
    );
  return pass("units", true, "stallguard.service and stallguard-watchdog.timer installed and active");
}

export function checkWatchdog(f: DoctorFacts): CheckResult {
  if (!f.watchdog.enabled) return skip("watchdog", false, "watchdog.enabled is false");
  if (!f.router.ok) return skip("watchdog", true, "needs the router (its /health has the last tick)");
  const wd = f.router.health.watchdog;
  const runs =
    "the timer runs it (stallguard install-units --enable); without the timer, stallguard serve ticks in-process";
  if (!wd) return fail("watchdog", true, "no watchdog tick recorded", runs);
  const since = f.now - wd.last_tick_at;
  if (since > 3 * f.watchdog.intervalMs)
    return fail(
      "watchdog",
      true,
      `last tick ${age(since)} ago (interval ${formatDuration(f.watchdog.intervalMs)})`,
      runs,
    );
  if (tickBlind(wd))
    return fail(
      "watchdog",
      true,
      `blind: ${blindDetail(wd)}`,
      wd.db === "unreadable" || wd.db === "unexpected_shape"
        ? "check that the watchdog's user can read opencode.db (opencode db path; watchdog.opencode_db.path); see the router's log"
        : "if opencode serve has a password, give the watchdog OPENCODE_SERVER_PASSWORD; see the router's log",
    );
  return pass("watchdog", true, `last tick ${age(since)} ago, ${tickReadout(wd)}`);
}

/** Every check, in the order a user sets the chain up. */
export function runChecks(f: DoctorFacts): CheckResult[] {
  return [
    checkOpencode(f),
    checkPlugin(f),
    checkProvider(f),
    checkRouter(f),
    ...checkPgStore(f.pgStore, f.now),
    checkReporting(f),
    ...checkSecrets(f),
    checkUpstream(f),
    checkDesktop(f),
    checkUnits(f),
    checkWatchdog(f),
  ];
}

/** 1 when a link the mode needs is broken, else 0. */
export function exitCode(results: readonly CheckResult[]): number {
  return results.some((r) => r.status === "fail" && r.needed) ? 1 : 0;
}
