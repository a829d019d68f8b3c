// The admin page's entry point (bundled by deploy/build.mjs to dist/admin/app.js).
// Token from the fragment or IndexedDB, then a refresh loop over the API; the
// fragment's tab (tabs.ts) picks what is shown: the Sessions readout, a
// session page, alerts and the breaker, or the knobs.
import * as z from "zod/mini";
import { parseDuration } from "../../../shared/browser.ts";
import { type Api, ApiError, createApi } from "./api.ts";
import { mountClients } from "./clients-view.ts";
import { byId, h, replace } from "./dom.ts";
import { renderEvents } from "./events-view.ts";
import { fmtAgo, fmtTime } from "./format.ts";
import { renderKnobs } from "./knobs-view.ts";
import { exportLabels } from "./labels-export.ts";
import { renderChannels, renderDeliveries } from "./notifier-view.ts";
import { headersOnlyNote } from "./plugin-state.ts";
import {
  channelViewSchema,
  deliverySchema,
  eventViewSchema,
  type Health,
  healthSchema,
  type KnobView,
  knobsResponseSchema,
  knobViewSchema,
  listIn,
  parseRows,
  routerEventViewSchema,
  sessionViewSchema,
} from "./schemas.ts";
import { loadSessionPage } from "./session-page.ts";
import { renderSessions } from "./sessions-view.ts";
import { parseTab, type Tab } from "./tabs.ts";
import {
  createTokenStore,
  DEFAULT_PREFS,
  fragmentWithoutToken,
  type Prefs,
  tokenFromFragment,
} from "./token.ts";
import { mountBreaker } from "./trips.ts";
import { watchdogNote, watchdogState } from "./watchdog-line.ts";

// The page's CSP has no 'unsafe-eval': keep zod from probing for it.
z.config({ jitless: true });

const REFRESH_MS = 3000;

const el = {
  auth: byId("auth"),
  authMessage: byId("auth-message"),
  authForm: byId<HTMLFormElement>("auth-form"),
  tokenInput: byId<HTMLInputElement>("token-input"),
  app: byId("app"),
  status: byId("status"),
  summary: byId("summary"),
  prefAuto: byId<HTMLInputElement>("pref-auto"),
  prefHideOk: byId<HTMLInputElement>("pref-hide-ok"),
  refreshNow: byId<HTMLButtonElement>("refresh-now"),
  forget: byId<HTMLButtonElement>("forget-token"),
  health: byId("health"),
  sessionsProblems: byId("sessions-problems"),
  sessions: byId<HTMLTableElement>("sessions-table"),
  deliveries: byId("deliveries-body"),
  events: byId("events-body"),
  channels: byId("channels-body"),
  knobs: byId("knobs-body"),
  reloadKnobs: byId<HTMLButtonElement>("reload-knobs"),
  session: byId("session-body"),
  marksLine: byId("marks-line"),
};

const store = createTokenStore((msg) => setStatus(msg, true));
let prefs: Prefs = { ...DEFAULT_PREFS };
let api: Api | null = null;
/** Bumped on every start and on 401, so an old refresh loop stops itself. */
let generation = 0;
let timer: ReturnType<typeof setTimeout> | undefined;
let knobs: KnobView[] = [];
let tab: Tab = parseTab(location.hash);

function setStatus(text: string, error = false): void {
  el.status.textContent = text;
  el.status.className = error ? "err" : "dim";
}

function showPrompt(message: string): void {
  generation++;
  clearTimeout(timer);
  api = null;
  el.app.hidden = true;
  el.auth.hidden = false;
  el.authMessage.textContent = message;
  el.authMessage.className = message.startsWith("401") ? "err" : "dim";
  el.tokenInput.value = "";
  el.tokenInput.focus();
}

function unauthorized(): void {
  showPrompt(
    "401: the router rejected this admin token. Paste the current one: the admin.token file stallguard serve names at start (~/.config/stallguard/admin.token), or $STALLGUARD_ADMIN_TOKEN.",
  );
}

/** Runs one API read; a 401 anywhere sends the page back to the token prompt. */
async function guarded<T>(label: string, op: () => Promise<T>, errors: string[]): Promise<T | undefined> {
  try {
    return await op();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) throw err;
    errors.push(`${label}: ${(err as Error).message}`);
    return undefined;
  }
}

function watchdogLine(health: Health, now: number): HTMLElement {
  const wd = health.watchdog;
  const raw = knobs.find((k) => k.path === "watchdog.interval")?.value;
  const interval = typeof raw === "string" ? parseDuration(raw) : typeof raw === "number" ? raw : undefined;
  const enabled = knobs.find((k) => k.path === "watchdog.enabled")?.value !== false;
  const state = watchdogState(health, interval, now, enabled);
  const plugins = health.plugins_live === undefined ? "" : `, ${health.plugins_live} plugin(s) live`;
  const parts: (string | HTMLElement)[] = [`router ${health.version}, db ${health.db}${plugins}; `];
  const cls = state === "none" || state === "late" || state === "blind" ? "warn" : "";
  const note = watchdogNote(state, health);
  parts.push(
    h(
      "span",
      { class: cls, "data-watchdog": state },
      !wd || state === "none" || state === "off"
        ? `watchdog: ${note}`
        : `watchdog: last tick ${fmtAgo(wd.last_tick_at, now)} (${fmtTime(wd.last_tick_at)})${note ? `, ${note}` : ""}`,
    ),
  );
  return h("span", {}, ...parts);
}

/** Shows the sections of the current tab and marks its nav link. */
function showTab(): void {
  for (const section of el.app.querySelectorAll<HTMLElement>("[data-tab]"))
    section.hidden = section.dataset.tab !== tab.name;
  for (const a of document.querySelectorAll<HTMLElement>("[data-nav]")) {
    const current = a.dataset.nav === tab.name || (tab.name === "session" && a.dataset.nav === "sessions");
    if (current) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

async function openTab(): Promise<void> {
  tab = parseTab(location.hash);
  showTab();
  if (tab.name === "session") await showSession(tab.id);
}

async function showSession(id: string): Promise<void> {
  if (!api) return;
  await loadSessionPage(id, {
    root: el.session,
    api,
    unauthorized,
    setStatus,
    refreshReadout: refresh,
  });
}

function marksLine(rows: Array<{ mark?: { kind: string } | null }>): HTMLElement[] {
  const falseAlarms = rows.filter((r) => r.mark?.kind === "false_alarm").length;
  const loops = rows.filter((r) => r.mark?.kind === "confirmed_loop").length;
  const exportButton = h("button", { type: "button", class: "small", id: "export-labels" }, "Export labels");
  exportButton.addEventListener("click", async () => {
    if (!api) return;
    try {
      const n = await exportLabels(api);
      setStatus(`exported ${n} label(s) to stallguard-labels.json`);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return unauthorized();
      setStatus(`export labels: ${(err as Error).message}`, true);
    }
  });
  return [
    h("span", {}, `marks: ${falseAlarms} healthy (false alarm), ${loops} loop (confirmed loop) `),
    exportButton,
    h("span", {}, " for stallguard calibrate --labels"),
  ];
}

async function treeAction(rootId: string, action: "stop" | "resume"): Promise<void> {
  if (!api) return;
  try {
    await api.send("POST", `/api/trees/${encodeURIComponent(rootId)}/${action}`, { by: "admin" });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return unauthorized();
    setStatus(`${action} ${rootId}: ${(err as Error).message}`, true);
    return;
  }
  await refresh();
}

async function refresh(): Promise<void> {
  const current = api;
  if (!current) return;
  const gen = generation;
  const errors: string[] = [];
  try {
    const [health, sessions, events, deliveries] = await Promise.all([
      guarded("health", () => current.get("/health"), errors),
      guarded("sessions", () => current.get("/api/sessions"), errors),
      guarded("events", () => current.get("/api/events?limit=50"), errors),
      guarded("deliveries", () => current.get("/api/deliveries", { optional: true }), errors),
    ]);
    if (gen !== generation) return;
    const now = Date.now();
    const h1 = health === undefined ? undefined : healthSchema.safeParse(health);
    if (h1?.success) replace(el.health, watchdogLine(h1.data, now), headersOnlyNote(h1.data));
    else if (h1) errors.push(`health: ${h1.error.issues[0]?.message ?? "invalid"}`);

    if (sessions !== undefined) {
      const list = listIn(sessions, "sessions");
      const parsed = parseRows(list ?? [], sessionViewSchema, "sessions");
      if (list === null) parsed.problems.push("sessions: response has no sessions list");
      replace(el.sessionsProblems, ...parsed.problems.map((p) => h("li", {}, p)));
      const counts = renderSessions(el.sessions, parsed.rows, {
        now,
        serverVersion: h1?.success ? h1.data.version : null,
        hideOk: prefs.hideOk,
        stop: (root) => treeAction(root, "stop"),
        resume: (root) => treeAction(root, "resume"),
      });
      replace(
        el.summary,
        `${counts.trees} trees, ${parsed.rows.length} sessions, `,
        h("span", { class: counts.flagged ? "warn" : "" }, `${counts.flagged} flagged`),
        ", ",
        h("span", { class: counts.refusedTrees ? "refused" : "" }, `${counts.refusedTrees} refused trees`),
      );
      replace(el.marksLine, ...marksLine(parsed.rows));
    }
    if (events !== undefined) {
      const parsed = parseRows(listIn(events, "events") ?? [], eventViewSchema, "events");
      const outageList = Array.isArray(events) ? [] : (listIn(events, "router_events") ?? []);
      const outages = parseRows(outageList, routerEventViewSchema, "router_events");
      renderEvents(el.events, parsed.rows, [...parsed.problems, ...outages.problems], now, outages.rows);
    }
    if (deliveries !== undefined) {
      const list = deliveries === null ? null : listIn(deliveries, "deliveries");
      const parsed = parseRows(list ?? [], deliverySchema, "deliveries");
      renderDeliveries(el.deliveries, list === null ? null : parsed.rows, parsed.problems, now);
    }
    setStatus(errors.length ? errors.join("; ") : `updated ${fmtTime(now)}`, errors.length > 0);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) unauthorized();
    else setStatus(`refresh: ${(err as Error).message}`, true);
  }
}

async function loadKnobs(): Promise<void> {
  const current = api;
  if (!current) return;
  try {
    const body = knobsResponseSchema.parse(await current.get("/api/knobs"));
    const parsed = parseRows(body.knobs, knobViewSchema, "knobs");
    knobs = parsed.rows;
    renderKnobs(el.knobs, knobs, body.excluded, parsed.problems, current);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return unauthorized();
    replace(el.knobs, h("div", { class: "err" }, `knobs: ${(err as Error).message}`));
  }
}

async function loadChannels(): Promise<void> {
  const current = api;
  if (!current) return;
  try {
    const body = await current.get("/api/channels", { optional: true });
    const list = body === null ? null : listIn(body, "channels");
    const parsed = parseRows(list ?? [], channelViewSchema, "channels");
    renderChannels(
      el.channels,
      list === null ? null : parsed.rows,
      parsed.problems,
      current,
      loadChannels,
      refresh,
    );
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return unauthorized();
    replace(el.channels, h("div", { class: "err" }, `channels: ${(err as Error).message}`));
  }
}

function schedule(gen: number): void {
  clearTimeout(timer);
  if (!prefs.autoRefresh) return;
  timer = setTimeout(async () => {
    if (gen !== generation) return;
    await refresh();
    if (gen === generation && tab.name === "session") await showSession(tab.id);
    if (gen === generation) schedule(gen);
  }, REFRESH_MS);
}

async function start(token: string): Promise<void> {
  generation++;
  const gen = generation;
  api = createApi(token);
  el.auth.hidden = true;
  el.app.hidden = false;
  setStatus("loading");
  mountBreaker(api, () => gen === generation);
  mountClients(api, () => gen === generation);
  showTab();
  await Promise.all([loadKnobs(), loadChannels(), refresh(), openTab()]);
  if (gen === generation) schedule(gen);
}

async function boot(): Promise<void> {
  const fromFragment = tokenFromFragment(location.hash);
  if (fromFragment) {
    // Drop the token from the address bar (and from history) before anything else.
    history.replaceState(
      null,
      "",
      `${location.pathname}${location.search}${fragmentWithoutToken(location.hash)}`,
    );
    await store.save(fromFragment);
  }
  prefs = await store.loadPrefs();
  el.prefAuto.checked = prefs.autoRefresh;
  el.prefHideOk.checked = prefs.hideOk;
  el.prefAuto.addEventListener("change", () => {
    prefs = { ...prefs, autoRefresh: el.prefAuto.checked };
    void store.savePrefs(prefs);
    if (api) schedule(generation);
  });
  el.prefHideOk.addEventListener("change", () => {
    prefs = { ...prefs, hideOk: el.prefHideOk.checked };
    void store.savePrefs(prefs);
    void refresh();
  });
  el.refreshNow.addEventListener("click", () => void refresh().then(openTab));
  window.addEventListener("hashchange", () => void openTab());
  el.reloadKnobs.addEventListener("click", () => void loadKnobs());
  el.forget.addEventListener("click", async () => {
    await store.forget();
    showPrompt("token forgotten");
  });
  el.authForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const token = el.tokenInput.value.trim();
    if (!token) return;
    await store.save(token);
    await start(token);
  });
  const token = fromFragment ?? (await store.load());
  if (token) await start(token);
  else
    showPrompt(
      "no admin token stored: paste the one in the admin.token file stallguard serve names at start (~/.config/stallguard/admin.token), or $STALLGUARD_ADMIN_TOKEN",
    );
}

void boot();
