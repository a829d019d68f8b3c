// The "Client keys" section: per named client key of the gate (server.client_keys,
// or "default"), what it asked for in the retention window: requests, refused,
// failed streams, spend, last request. Reads GET /api/clients. The section is
// added to the page by this module, after the Sessions readout.
import { type ClientUsageView, clientUsageSchema, parseRows } from "../../api/schemas.ts";
import type { Api } from "./api.ts";
import { dataTable, h, problemList, replace } from "./dom.ts";
import { fmtAgo, fmtTime } from "./format.ts";
import { loadSection, mountSection } from "./section.ts";

const REFRESH_MS = 5000;

export function renderClients(
  root: HTMLElement,
  body: { clients: ClientUsageView[]; configured: string[]; problems: string[] },
  now: number,
): void {
  const seen = new Set(body.clients.map((c) => c.client));
  const unused = body.configured.filter((n) => !seen.has(n));
  const cols = ["client key", "requests", "refused", "failed streams", "spend", "last request"];
  const rows = [
    ...body.clients.map((c) =>
      h(
        "tr",
        { "data-client": c.client },
        h("td", { class: "sid" }, c.client || "(unnamed, before keys)"),
        h("td", { class: "num" }, c.requests),
        h("td", { class: "num" }, c.refused),
        h("td", { class: "num" }, c.failed),
        h("td", { class: "num" }, `$${c.cost_usd.toFixed(2)}`),
        h("td", { title: fmtTime(c.last_at) }, fmtAgo(c.last_at, now)),
      ),
    ),
    ...unused.map((n) =>
      h(
        "tr",
        { "data-client": n },
        h("td", { class: "sid" }, n),
        h("td", { colspan: 5, class: "dim" }, "no requests"),
      ),
    ),
  ];
  replace(root, problemList(body.problems), dataTable("clients", cols, rows, "no requests yet"));
}

async function load(api: Api, root: HTMLElement): Promise<void> {
  const o = await loadSection(api, root, "/api/clients", "client keys");
  if (!o) return;
  const clients = parseRows(Array.isArray(o.clients) ? o.clients : [], clientUsageSchema, "clients");
  const configured = Array.isArray(o.configured)
    ? o.configured.filter((n): n is string => typeof n === "string")
    : [];
  renderClients(root, { clients: clients.rows, configured, problems: clients.problems }, Date.now());
}

/** Adds the section (after the Sessions readout) and keeps it fresh while `alive()` holds. */
export function mountClients(api: Api, alive: () => boolean): void {
  mountSection(
    {
      id: "clients",
      title: "Client keys",
      after: "sessions",
      tab: "sessions",
      refreshMs: REFRESH_MS,
      load: (root) => load(api, root),
    },
    alive,
  );
}
