// The session page: who the session is and where it stands, the False alarm /
// Confirmed loop buttons, its history as one timeline (verdict bands, refusals,
// requests, landed changes, recoveries, the first flag, turns and $ since
// landed), the evidence behind the verdict, the incident report, the mode's
// actions and the verdict history. Built from the detail answer only.
import type { SessionDetail } from "../../api/session-detail.ts";
import { drawTimeline, VERDICT_COLORS } from "../../timeline/draw.ts";
import { button, type Child, dataTable, h, replace } from "./dom.ts";
import { evidenceRows } from "./evidence.ts";
import { fmtAgo, fmtInt, fmtTime, fmtUsd } from "./format.ts";
import { pluginState } from "./liveness.ts";
import { markButtons, markWords, wasFlagged } from "./mark-words.ts";
import { PLUGIN_TITLE } from "./plugin-state.ts";
import { actionsOf, sessionTimeline } from "./session-history.ts";
import { svgElement } from "./svg-dom.ts";
import { tabHash } from "./tabs.ts";

export interface SessionPageActions {
  mark(kind: "false_alarm" | "confirmed_loop"): Promise<void>;
  unmark(): Promise<void>;
}

const vClass = (v: string) => `v v-${v.replace(/[^a-z_]/g, "")}`;
const sessionLink = (id: string) => h("a", { href: tabHash({ name: "session", id }), class: "sid" }, id);

/** One row of facts under their names; each value cell carries data-fact for tests and styling. */
function factTable(id: string, cells: Array<[string, Child]>): HTMLElement {
  return h(
    "table",
    { class: "facts", id },
    h("thead", {}, h("tr", {}, ...cells.map(([k]) => h("th", { scope: "col" }, k)))),
    h("tbody", {}, h("tr", {}, ...cells.map(([k, v]) => h("td", { "data-fact": k }, v)))),
  );
}

/** What opencode shows the user about the session: its title, folder and start. */
function about(d: SessionDetail): HTMLElement {
  const s = d.session;
  const part = (key: string, text: string | null | undefined, prefix = "") =>
    text ? h("span", { "data-about": key, title: text }, prefix, text) : null;
  const parts = [
    part("title", s.title),
    part("folder", s.directory),
    part("started", s.created_at ? fmtTime(s.created_at) : null, "started "),
  ].filter((p) => p !== null);
  return h(
    "div",
    { class: "about", id: "session-about" },
    ...(parts.length
      ? parts.flatMap((p, i) => (i ? [h("span", { class: "dim" }, " - "), p] : [p]))
      : [
          h(
            "span",
            { class: "dim" },
            "no title or folder reported (no plugin, or one from before they were sent)",
          ),
        ]),
  );
}

function facts(d: SessionDetail): HTMLElement {
  const s = d.session;
  const plugin = pluginState(s);
  return factTable("session-facts", [
    ["agent", s.agent ?? "-"],
    ["tree", s.root_id === s.session_id ? "root" : sessionLink(s.root_id)],
    ["parent", s.parent_id ? sessionLink(s.parent_id) : "-"],
    [
      "state",
      h(
        "span",
        { class: s.ended ? "dim" : "state running", "data-state": s.ended ? "ended" : "running" },
        `${s.ended ? "ended" : "running"}, last heard ${fmtAgo(s.last_seen_at, d.now)}`,
      ),
    ],
    [
      "plugin",
      h(
        "span",
        { class: plugin === "headers only" ? "warn" : "", title: PLUGIN_TITLE[plugin] },
        `${plugin === "no" ? "not live" : plugin}${s.plugin_version ? ` ${s.plugin_version}` : ""}`,
      ),
    ],
    [
      "gate",
      s.refused ? h("span", { class: "refused" }, `refused (${s.stopped_by ?? "?"})`) : "lets it through",
    ],
    ["stage", s.cannot_act ? `${s.stage}, cannot act: ${s.cannot_act}` : s.stage],
  ]);
}

/** Where the session stands now: the verdict and the reporter's current figures. */
function figures(d: SessionDetail): HTMLElement {
  const s = d.session;
  return factTable("session-figures", [
    [
      "verdict",
      h("span", {}, h("span", { class: vClass(s.verdict) }, s.verdict), s.reason ? ` (${s.reason})` : ""),
    ],
    ["worst", `${s.worst}, flagged ${s.flags}x`],
    ["calls", fmtInt(s.calls)],
    ["top target", s.top_target ? `${s.top_target} x${fmtInt(s.top_target_count)}` : "-"],
    ["turns since landed", fmtInt(s.turns_since_landed)],
    ["$ since landed", fmtUsd(s.usd_since_landed)],
    ["context", fmtInt(s.context_tokens)],
    ["last landed", s.last_landed_at ? fmtTime(s.last_landed_at) : "never"],
  ]);
}

function markBar(d: SessionDetail, act: SessionPageActions, note: string | null): HTMLElement {
  const flagged = wasFlagged(d.session);
  const m = d.mark;
  const buttons: Child[] = markButtons(flagged).flatMap((b) => [
    button(b.label, () => act.mark(b.kind), {
      class: b.kind === "false_alarm" ? "mark-false" : "mark-loop",
      title: b.title,
      disabled: m?.kind === b.kind,
    }),
    " ",
  ]);
  return h(
    "div",
    { class: "mark-bar", id: "mark-bar", "data-mark": m?.kind ?? "none" },
    ...buttons,
    m
      ? h(
          "span",
          { class: "mark-state" },
          `marked ${markWords(m.kind, flagged)} by ${m.by} ${fmtAgo(m.at, d.now)} (${fmtTime(m.at)}) `,
          button("undo", () => act.unmark(), { class: "small mark-undo" }),
        )
      : h("span", { class: "dim" }, flagged ? "not marked" : "never flagged: label it for calibrate"),
    m && note ? h("span", { class: "dim mark-note" }, note) : null,
  );
}

function legend(): HTMLElement {
  const swatch = (color: string, text: string, shape = "box") => {
    const sw = h("span", { class: `sw ${shape}` });
    sw.style.background = color;
    return h("span", { class: "lg" }, sw, text);
  };
  return h(
    "div",
    { class: "legend dim" },
    swatch(VERDICT_COLORS.ok, "ok"),
    swatch(VERDICT_COLORS.stalling, "stalling"),
    swatch(VERDICT_COLORS.looping, "looping"),
    swatch("#a40e26", "refused", "bar"),
    swatch("#607d8b", "model request", "tick"),
    swatch("#8b0000", "refused request", "tick"),
    swatch("#1b873f", "landed"),
    swatch("#1f6feb", "recovery"),
    swatch("#8250df", "mark"),
    swatch("#b00020", "first flag", "tick"),
  );
}

function evidence(d: SessionDetail): HTMLElement {
  const rows = evidenceRows(d).map((r) =>
    h(
      "tr",
      { "data-evidence": r.key, class: r.fired ? "fired" : null },
      h("th", { scope: "row" }, r.label, r.fired ? h("span", { class: "fired-mark" }, " < fired") : null),
      h("td", { class: r.key === "top_targets" || r.key === "same_result" ? "target" : "" }, r.value),
      h("td", { class: "dim" }, r.limits),
    ),
  );
  return dataTable("evidence", ["", "value", "thresholds"], rows, "no verdict reported yet");
}

function actions(d: SessionDetail): HTMLElement {
  const rows = actionsOf(d).map((a) =>
    h(
      "tr",
      { "data-action-what": a.what },
      h("td", { title: fmtTime(a.at) }, fmtTime(a.at).slice(11)),
      h("td", {}, a.what),
      h("td", {}, a.by),
      h("td", { class: "sid" }, a.detail),
    ),
  );
  return dataTable("actions", ["when", "action", "by", "detail"], rows, "none: the mode has not acted");
}

function history(d: SessionDetail): HTMLElement {
  const rows = [...d.transitions]
    .reverse()
    .map((t) =>
      h(
        "tr",
        { "data-transition": t.verdict },
        h("td", { title: fmtTime(t.at) }, fmtTime(t.at).slice(11)),
        h("td", {}, `${t.previous} -> `, h("span", { class: vClass(t.verdict) }, t.verdict)),
        h("td", {}, t.reason ?? "-"),
        h("td", {}, t.source),
        h("td", { class: "num" }, fmtInt(t.signals.turns_since_landed)),
        h("td", { class: "num" }, fmtUsd(t.signals.usd_since_landed)),
      ),
    );
  return dataTable("history", ["when", "change", "reason", "source", "turns", "$"], rows, "no transitions");
}

/** Renders the page for `d` into `root`. */
export function renderSessionPage(
  root: HTMLElement,
  d: SessionDetail,
  act: SessionPageActions,
  markNote: string | null = null,
): void {
  const s = d.session;
  const svg = svgElement(drawTimeline(sessionTimeline(d), 1100));
  svg.setAttribute("id", "session-timeline");
  const kids = d.children.length
    ? h(
        "div",
        { class: "dim children" },
        "sub-agents: ",
        ...d.children.flatMap((c, i) => [
          i ? ", " : "",
          sessionLink(c.session_id),
          ` (${c.agent ?? "?"}, `,
          h("span", { class: vClass(c.verdict) }, c.verdict),
          ")",
        ]),
      )
    : null;
  replace(
    root,
    h(
      "h2",
      {},
      h("a", { href: tabHash({ name: "sessions" }), class: "back" }, "< Sessions"),
      " session ",
      h("span", { class: "sid", id: "session-id" }, s.session_id),
    ),
    about(d),
    facts(d),
    figures(d),
    kids,
    markBar(d, act, markNote),
    h("h3", {}, "Timeline"),
    h("div", { class: "timeline" }, svg),
    legend(),
    h("h3", {}, "Why it was flagged"),
    evidence(d),
    h("h3", {}, "Incident report"),
    s.report ? h("pre", { id: "session-report" }, s.report) : h("div", { class: "dim" }, "none"),
    h("h3", {}, "Mode actions"),
    actions(d),
    h("h3", {}, "Verdict history"),
    history(d),
  );
}
