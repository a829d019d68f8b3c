// Whether a session, its plugin and its tree still run, from the readout's
// rows: the server says a session ended when nothing was heard of it (no
// heartbeat, model request or report) for three heartbeat periods, the
// window a live plugin is judged by. Pure, so it is unit-tested without a browser.

interface Live {
  plugin_live: boolean;
  plugin_version: string | null;
  plugin_headers?: boolean | undefined;
  ended?: boolean | undefined;
}

export type PluginState = "live" | "headers only" | "ended" | "no";

/**
 * The plugin of a session: live (its reports arrive), ended with its opencode,
 * headers only (the gate sees its headers but no report arrives: it reports
 * elsewhere or cannot reach the router), or none heard from.
 */
export function pluginState(r: Live): PluginState {
  if (r.plugin_live) return "live";
  if (r.plugin_version !== null && r.ended === true) return "ended";
  return r.plugin_headers === true ? "headers only" : "no";
}

/** A tree: stopped (refused), ended (every session in it ended), or running. */
export function treeState(rows: ReadonlyArray<{ refused: boolean; ended?: boolean | undefined }>) {
  if (rows.some((r) => r.refused)) return "stopped" as const;
  return rows.length > 0 && rows.every((r) => r.ended === true) ? ("ended" as const) : ("running" as const);
}
