// The session page: who the session is and where it stands, the False alarm /
// Confirmed loop buttons, its history as one timeline (verdict bands, refusals,
// requests, landed changes, recoveries, the first flag, turns and $ since
// landed), the evidence behind the verdict, the incident report, the mode's
// actions and the verdict history. Built from the detail answer only.
import type { SessionDetail } from "../../api/session-detail.ts";
import { drawTimeline, VERDICT_COLORS } from "../../timeline/draw.ts";
import { button, type Child, dataTable, h, replace } from "./dom.ts";
import { evidenceRows } from "./evidence.ts";
import { fmtAgo, fmtInt, fmtMark, fmtTime, fmtUsd } from "./format.ts";
import { PLUGIN_TITLE, pluginState } from "./plugin-state.ts";
import { actionsOf, sessionTimeline } from "./session-history.ts";
import { svgElement } from "./svg-dom.ts";
import { viewHash } from "./views.ts";

export interface SessionPageActions {
  mark(kind: "false_alarm" | "confirmed_loop"): Promise<void>;
  unmark(): Promise<void>;
}

const vClass = (v: string) => `v v-${v.replace(/[^a-z_]/g, "")}`;
const sessionLink = (id: string) => h("a", { href: viewHash({ name: "session", id }), class: "sid" }, id);

/** live 0.1.0 (reporting), headers only 0.1.0 (the gate sees it, its reports do not arrive), or not live. */
function pluginFact(s: SessionDetail["session"]): Child {
  const state = pluginState(s);
  if (state === "none") return "not live";
  const text = `${state === "reporting" ? "live" : "headers only"} ${s.plugin_version ?? ""}`.trim();
  return h("span", { class: state === "reporting" ? "" : "warn", title: PLUGIN_TITLE[state] }, text);
}

function facts(d: SessionDetail): HTMLElement {
  const s = d.session;
  const cells: Array<[string, Child]> = [
    ["agent", s.agent ?? "-"],
    ["tree", s.root_id === s.session_id ? "root" : sessionLink(s.root_id)],
    ["parent", s.parent_id ? sessionLink(s.parent_id) : "-"],
    [
      "verdict",
      h("span", {}, h("span", { class: vClass(s.verdict) }, s.verdict), s.reason ? ` (${s.reason})` : ""),
    ],
    ["worst", `${s.worst}, flagged ${s.flags}x`],
    ["stage", s.cannot_act ? `${s.stage}, cannot act: ${s.cannot_act}` : s.stage],
    [
      "gate",
      s.refused ? h("span", { class: "refused" }, `refused (${s.stopped_by ?? "?"})`) : "lets it through",
    ],
    ["plugin", pluginFact(s)],
    ["turns since landed", fmtInt(s.turns_since_landed)],
    ["$ since landed", fmtUsd(s.usd_since_landed)],
    ["context", fmtInt(s.context_tokens)],
    ["last landed", s.last_landed_at ? fmtTime(s.last_landed_at) : "never"],
  ];
  return h(
    "table",
    { class: "facts", id: "session-facts" },
    h("thead", {}, h("tr", {}, ...cells.map(([k]) => h("th", { scope: "col" }, k)))),
    h("tbody", {}, h("tr", {}, ...cells.map(([k, v]) => h("td", { "data-fact": k }, v)))),
  );
}

function markBar(d: SessionDetail, act: SessionPageActions): HTMLElement {
  const s = d.session;
  const flagged = s.worst !== "ok" || s.flags > 0;
  const m = d.mark;
  const buttons: Child[] = flagged
    ? [
        button("False alarm", () => act.mark("false_alarm"), {
          class: "mark-false",
          title: "label it healthy for calibrate; lifts every refusal in its tree",
          disabled: m?.kind === "false_alarm",
        }),
        " ",
        button("Confirmed loop", () => act.mark("confirmed_loop"), {
          class: "mark-loop",
          title: "label it a loop for calibrate",
          disabled: m?.kind === "confirmed_loop",
        }),
        " ",
      ]
    : [h("span", { class: "dim" }, "never flagged: nothing to mark ")];
  return h(
    "div",
    { class: "mark-bar", id: "mark-bar", "data-mark": m?.kind ?? "none" },
    ...buttons,
    m
      ? h(
          "span",
          { class: "mark-state" },
          `marked ${fmtMark(m.kind)} by ${m.by} ${fmtAgo(m.at, d.now)} (${fmtTime(m.at)}) `,
          button("undo", () => act.unmark(), { class: "small mark-undo" }),
        )
      : flagged
        ? h("span", { class: "dim" }, "not marked")
        : null,
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
export function renderSessionPage(root: HTMLElement, d: SessionDetail, act: SessionPageActions): void {
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
      h("a", { href: viewHash({ name: "sessions" }), class: "back" }, "< Sessions"),
      " session ",
      h("span", { class: "sid", id: "session-id" }, s.session_id),
    ),
    facts(d),
    kids,
    markBar(d, act),
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
