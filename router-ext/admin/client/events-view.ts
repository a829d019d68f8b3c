// Recent verdict changes, newest first as the API returns them.
import { dataTable, h, problemList, replace } from "./dom.ts";
import { fmtAgo, fmtTime } from "./format.ts";
import type { EventRow } from "./schemas.ts";

export function renderEvents(root: HTMLElement, events: EventRow[], problems: string[], now: number): void {
  replace(
    root,
    problemList(problems),
    dataTable(
      "events",
      ["when", "session", "tree", "change", "reason", "source"],
      events.map((e) =>
        h(
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
        ),
      ),
      "no events yet",
    ),
  );
}
