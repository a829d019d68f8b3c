// How the readout names a session's plugin: reporting (its transitions or
// heartbeats arrive), headers only (the gate saw the plugin's headers on
// model requests, but no report arrives: a plugin that reports elsewhere or
// cannot reach the router), or none. And the header line that names the
// plugin processes sending headers only, with the URL each reports to.
import { h } from "./dom.ts";
import type { Health, SessionRow } from "./schemas.ts";

export type PluginState = "reporting" | "headers_only" | "none";

export function pluginState(r: Pick<SessionRow, "plugin_live" | "plugin_headers">): PluginState {
  if (r.plugin_live) return "reporting";
  return r.plugin_headers ? "headers_only" : "none";
}

export const PLUGIN_LABEL: Record<PluginState, string> = {
  reporting: "live",
  headers_only: "headers only",
  none: "no",
};

export const PLUGIN_TITLE: Record<PluginState, string> = {
  reporting: "the plugin's reports arrive",
  headers_only:
    "the gate saw the plugin's headers, but its reports do not arrive: run stallguard doctor, it names the URL the plugin reports to",
  none: "no plugin report and no plugin headers lately",
};

type HeadersOnly = NonNullable<Health["plugins_headers_only"]>[number];

function where(p: HeadersOnly): string {
  const url = p.report_url ?? "a URL it does not say (an older plugin)";
  return p.report_state === "failing" ? `${url} (its deliveries fail)` : url;
}

/** "; N plugin(s) send headers but do not report: to URL, ..." or nothing when every plugin reports. */
export function headersOnlyNote(health: Health): HTMLElement | null {
  const list = health.plugins_headers_only ?? [];
  if (list.length === 0) return null;
  const urls = [...new Set(list.map(where))].join(", ");
  return h(
    "span",
    { class: "warn", "data-plugins": "headers-only" },
    `; ${list.length} plugin(s) send headers but do not report: they report to ${urls}`,
  );
}
