// What the readout says about a plugin's state (liveness.ts pluginState) on
// hover, and the header line that names the plugin processes sending headers
// only (the gate sees them, their reports do not arrive), with the URL each
// reports to.
import { h } from "./dom.ts";
import type { PluginState } from "./liveness.ts";
import type { Health } from "./schemas.ts";

export const PLUGIN_TITLE: Record<PluginState, string> = {
  live: "the plugin's reports arrive",
  "headers only":
    "the gate saw the plugin's headers, but its reports do not arrive: run stallguard doctor, it names the URL the plugin reports to",
  ended: "nothing heard of this session for three heartbeat periods: its opencode ended",
  no: "no plugin report and no plugin headers lately",
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
