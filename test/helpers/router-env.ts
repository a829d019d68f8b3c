// The environment the tests start a router with: its own HOME and config
// folder, so the token files serve creates (plugin.token, admin.token,
// client.key) land in the test's temp dir, never in the user's own.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export function routerEnv(dir: string, extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, "config"),
    ...extra,
  };
}

/** A token file serve wrote under routerEnv(dir): "plugin", "admin" or "client". */
export function tokenFile(dir: string, which: "plugin" | "admin" | "client"): string {
  const name = which === "client" ? "client.key" : `${which}.token`;
  return readFileSync(join(dir, "config", "stallguard", name), "utf8").trim();
}
