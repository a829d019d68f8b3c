// The "Model breaker" section: each model's breaker state with its current
// window rates and a Resume button, then every recorded trip with its evidence
// (sessions, verdicts, rates, window). Reads GET /api/breaker; Resume posts
// /api/breaker/:model/resume. The section is added to the page by this module.
import { formatDuration } from "../../../shared/browser.ts";
import {
  type BreakerModelView,
  type BreakerTripView,
  breakerModelSchema,
  breakerTripSchema,
  parseRows,
} from "../../api/schemas.ts";
import { type Api, ApiError } from "./api.ts";
import { button, dataTable, h, problemList, replace } from "./dom.ts";
import { fmtAgo, fmtTime } from "./format.ts";
import { loadSection, mountSection } from "./section.ts";

const REFRESH_MS = 3000;

const fix = (n: number | null) => (n === null ? "-" : String(Math.round(n * 1000) / 1000));
const dur = (ms: number | null | undefined) => (typeof ms === "number" && ms > 0 ? formatDuration(ms) : "-");
const phaseClass = (p: string) => (p === "open" ? "refused" : p === "half_open" ? "warn" : "state running");

const table = (cols: string[], rows: HTMLElement[], empty: string, cls: string) =>
  dataTable(cls, cols, rows, empty);

const MODEL_COLUMNS = [
  "model",
  "state",
  "trips",
  "fallback",
  "stalled/served trees",
  "rate",
  "others",
  "ratio",
  "open",
  "resumed",
  "",
];
const TRIP_COLUMNS = [
  "when",
  "model",
  "change",
  "stalled/served",
  "rate",
  "others",
  "ratio",
  "window",
  "cooldown",
  "fallback",
  "evidence",
];

/** One model's breaker state, its window rates and, unless closed, a Resume button. */
function modelRow(m: BreakerModelView, now: number, resume: (model: string) => Promise<void>): HTMLElement {
  return h(
    "tr",
    { "data-model": m.model, "data-phase": m.phase },
    h("td", { class: "sid" }, m.model),
    h("td", {}, h("span", { class: `v ${phaseClass(m.phase)}` }, m.phase)),
    h("td", { class: "num" }, m.trips),
    h("td", { class: "sid" }, m.fallback ?? "none (advisory)"),
    h("td", { class: "num" }, m.stalled_trees === null ? "-" : `${m.stalled_trees}/${m.served_trees ?? 0}`),
    h("td", { class: "num" }, fix(m.rate)),
    h("td", { class: "num" }, fix(m.others_rate)),
    h("td", { class: "num" }, fix(m.ratio)),
    h(
      "td",
      { title: fmtTime(m.phase === "half_open" ? m.probe_until : m.until) },
      m.phase === "open" ? `until ${fmtTime(m.until)}` : m.phase === "half_open" ? "probing" : "-",
    ),
    h("td", {}, m.resumed_by ? `${m.resumed_by} ${fmtAgo(m.resumed_at, now)}` : "-"),
    h(
      "td",
      {},
      m.phase === "closed"
        ? null
        : button("Resume", () => resume(m.model), { class: "small", "data-action": "breaker-resume" }),
    ),
  );
}

/** The sessions a trip stood on, one line each. */
function tripEvidence(t: BreakerTripView): HTMLElement {
  return h(
    "ul",
    { class: "evidence" },
    ...t.evidence.map((e) =>
      h(
        "li",
        { "data-evidence-session": e.session_id },
        h("span", { class: `v v-${e.verdict.replace(/[^a-z_]/g, "")}` }, e.verdict),
        ` ${e.session_id}`,
        e.root_id && e.root_id !== e.session_id ? ` (tree ${e.root_id})` : "",
        ` ${fmtTime(e.at)}`,
      ),
    ),
  );
}

/** One recorded trip: when, the rates against the other models, the window and its evidence. */
function tripRow(t: BreakerTripView, now: number): HTMLElement {
  return h(
    "tr",
    { "data-trip": t.seq, "data-trip-model": t.model },
    h("td", { title: fmtTime(t.at) }, fmtAgo(t.at, now)),
    h("td", { class: "sid" }, t.model),
    h("td", {}, `${t.previous} -> open (trip ${t.trips})`),
    h("td", { class: "num", "data-field": "trees" }, `${t.stalled_trees}/${t.served_trees}`),
    h("td", { class: "num", "data-field": "rate" }, fix(t.rate)),
    h("td", { class: "num" }, `${fix(t.others_rate)} (${t.others_stalled}/${t.others_served})`),
    h("td", { class: "num", "data-field": "ratio" }, `x${fix(t.ratio)}`),
    h(
      "td",
      { "data-field": "window" },
      `${dur(t.window_ms)}, min ${t.min_sessions ?? "-"}, ratio ${t.rate_ratio ?? "-"}`,
    ),
    h("td", {}, dur(t.cooldown_ms)),
    h("td", { class: "sid" }, t.fallback ?? "none (advisory)"),
    h("td", { class: "sid" }, tripEvidence(t)),
  );
}

export function renderBreaker(
  root: HTMLElement,
  body: { enabled: boolean; models: BreakerModelView[]; trips: BreakerTripView[]; problems: string[] },
  now: number,
  resume: (model: string) => Promise<void>,
): void {
  replace(
    root,
    problemList(body.problems),
    body.enabled ? null : h("div", { class: "warn" }, "breaker disabled (breaker.enabled)"),
    table(
      MODEL_COLUMNS,
      body.models.map((m) => modelRow(m, now, resume)),
      "no model traffic in the window",
      "breaker-models",
    ),
    h("h3", {}, "Trips"),
    table(
      TRIP_COLUMNS,
      body.trips.map((t) => tripRow(t, now)),
      "no trips recorded",
      "breaker-trips",
    ),
  );
}

async function load(api: Api, root: HTMLElement): Promise<void> {
  const o = await loadSection(api, root, "/api/breaker", "breaker");
  if (!o) return;
  const models = parseRows(Array.isArray(o.models) ? o.models : [], breakerModelSchema, "models");
  const trips = parseRows(Array.isArray(o.trips) ? o.trips : [], breakerTripSchema, "trips");
  renderBreaker(
    root,
    {
      enabled: o.enabled !== false,
      models: models.rows,
      trips: trips.rows,
      problems: [...models.problems, ...trips.problems],
    },
    Date.now(),
    async (model) => {
      try {
        await api.send("POST", `/api/breaker/${encodeURIComponent(model)}/resume`, { by: "admin" });
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return;
        replace(root, h("div", { class: "err" }, `resume ${model}: ${(err as Error).message}`));
        return;
      }
      await load(api, root);
    },
  );
}

/** Adds the section (before the channels) and keeps it fresh while `alive()` holds. */
export function mountBreaker(api: Api, alive: () => boolean): void {
  mountSection(
    {
      id: "breaker",
      title: "Model breaker",
      before: "channels",
      tab: "activity",
      refreshMs: REFRESH_MS,
      load: (root) => load(api, root),
    },
    alive,
  );
}
