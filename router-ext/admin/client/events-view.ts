// Recent verdict changes and the router's own outages, newest first.
import { formatSpan } from "../../../shared/browser.ts";
import { dataTable, h, problemList, replace } from "./dom.ts";
import { fmtAgo, fmtTime } from "./format.ts";
import type { EventView, RouterEventView } from "./schemas.ts";

function transitionRow(e: EventView, now: number): HTMLElement {
  return h(
    "tr",
    { "data-event-session": e.session_id },
    h("td", { title: fmtTime(e.at) }, fmtAgo(e.at, now)),
    h("td", { class: "sid" }, e.session_id),
    h("td", { class: "sid" }, e.root_id ?? "-"),
    h(
      "td",
      {},
      `${e.previous ?? "?"} -> `,
      h("span", { class: `v v-${e.verdict.replace(/[^a-z_]/g, "")}` }, e.verdict),
    ),
    h("td", {}, e.reason ?? "-"),
    h("td", {}, e.source ?? "-"),
  );
}

/** The router was down: agents going through the gate could not reach their model meanwhile. */
function outageRow(r: RouterEventView, now: number): HTMLElement {
  const how = r.clean
    ? "it was stopped"
    : "it ended without stopping (crash, kill or power loss; from its last alive mark)";
  return h(
    "tr",
    { "data-event-router": "down" },
    h("td", { title: fmtTime(r.to) }, fmtAgo(r.to, now)),
    h("td", {}, "-"),
    h("td", {}, "-"),
    h("td", { class: "warn" }, `router down ${formatSpan(r.to - r.from)}`),
    h("td", {}, `from ${fmtTime(r.from)} to ${fmtTime(r.to)}; ${how}`),
    h("td", {}, "router"),
  );
}

export function renderEvents(
  root: HTMLElement,
  events: EventView[],
  problems: string[],
  now: number,
  outages: RouterEventView[] = [],
): void {
  const rows = [
    ...events.map((e) => ({ at: e.at, el: transitionRow(e, now) })),
    ...outages.map((r) => ({ at: r.to, el: outageRow(r, now) })),
  ].sort((a, b) => b.at - a.at);
  replace(
    root,
    problemList(problems),
    dataTable(
      "events",
      ["when", "session", "tree", "change", "reason", "source"],
      rows.map((r) => r.el),
      "no events yet",
    ),
  );
}
