// Whether a session, its plugin and its tree still run, from the readout's
// rows: the server says a session ended when nothing was heard of it (no
// heartbeat, model request or report) for three heartbeat periods, the
// window a live plugin is judged by. Pure, so it is unit-tested without a browser.

interface Live {
  plugin_live: boolean;
  plugin_version: string | null;
  ended?: boolean | undefined;
}

/** The plugin of a session: live, ended with its opencode, or none heard from. */
export function pluginState(r: Live): "live" | "ended" | "no" {
  if (r.plugin_live) return "live";
  return r.plugin_version !== null && r.ended === true ? "ended" : "no";
}

/** A tree: stopped (refused), ended (every session in it ended), or running. */
export function treeState(rows: ReadonlyArray<{ refused: boolean; ended?: boolean | undefined }>) {
  if (rows.some((r) => r.refused)) return "stopped" as const;
  return rows.length > 0 && rows.every((r) => r.ended === true) ? ("ended" as const) : ("running" as const);
}
