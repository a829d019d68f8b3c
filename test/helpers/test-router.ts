// The router extension as the tests start it in-process: on loopback with a
// free port, its config.local.yaml (local.yaml) and SQLite file under the
// test's temp dir, no in-process watchdog and a silent log; `over` changes any
// of that and adds the rest (env, upstream).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type RunningServer, type StartOptions, startServer } from "../../router-ext/server/start.ts";

/** No watchdog and no notification channels: for tests that drive the plugin, the gate or the API. */
export const QUIET_LOCAL_YAML = "watchdog:\n  enabled: false\nnotifications:\n  channels: []\n";

export function startTestRouter(
  dir: string,
  localYaml: string,
  over: StartOptions = {},
): Promise<RunningServer> {
  const configPath = join(dir, "local.yaml");
  writeFileSync(configPath, localYaml);
  return startServer({
    port: 0,
    host: "127.0.0.1",
    dbPath: join(dir, "stallguard.db"),
    configPath,
    watchdog: false,
    log: () => {},
    ...over,
  });
}
