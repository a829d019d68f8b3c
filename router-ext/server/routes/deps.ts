// What every route of the server is built from: the store, the live config,
// the clock and the log. createApp (router-ext/server/app.ts) makes one and
// hands it to each routes/<resource>.ts.
import type { RouterStore } from "../../store/router-store.ts";
import type { LiveConfig } from "../live-config.ts";

export interface RouteDeps {
  store: RouterStore;
  config: LiveConfig;
  now: () => number;
  log: (line: string) => void;
  /** A plugin heard from within this long is live (three heartbeats). */
  liveWindow: () => number;
}
