// `stallguard doctor [--json] [--upstream] [--router URL] [--project DIR] [--opencode PATH] [--config FILE] [--db TARGET]`:
// checks the chain a user set up, in order (opencode, the plugin, the provider
// and its key, the router and its database, the token files, the upstream
// (opt-in), D-Bus, the systemd units, the watchdog's last tick) and prints a
// pass/fail list with the fix for each failure. Exit 1 when a link the chosen
// mode needs is broken, 2 for a bad config, else 0.
import { resolve } from "node:path";
import { defineCommand } from "citty";
import { exitCode, runChecks } from "../doctor/checks.ts";
import { gatherFacts } from "../doctor/gather.ts";
import { renderJson, renderText } from "../doctor/render.ts";
import { stringArg, switchArg } from "./args.ts";
import type { CliIo } from "./io.ts";
import { loadWatchdogConfig } from "./watchdog.ts";

export default defineCommand({
  meta: {
    name: "doctor",
    description:
      "Check the whole install (opencode, plugin, provider and key, router, its PostgreSQL store, tokens, upstream, D-Bus, units, watchdog) and say how to fix what is broken",
  },
  args: {
    json: switchArg("Print the checks as one JSON document", false),
    upstream: switchArg("Also send a models request to the upstream (server.upstream)", false),
    router: stringArg(
      "The router's URL (default STALLGUARD_URL, plugin.router_url, the router.json serve writes, http://127.0.0.1:4870)",
    ),
    project: stringArg("The project opencode runs in (default: the current directory)"),
    opencode: stringArg("The opencode binary (default: opencode on PATH)"),
    config: stringArg("A config file layered over config/config.yaml"),
    db: stringArg(
      "The router's store as serve takes it (default server.db); a postgres:// URL adds checks of PostgreSQL: password source, connection, migrations, replicas alive",
    ),
  },
  async run({ args, data }): Promise<number> {
    const io = data as CliIo;
    const loaded = await loadWatchdogConfig(typeof args.config === "string" ? args.config : undefined, {
      env: io.env,
    });
    if (!loaded.ok) {
      io.stderr.write(`stallguard doctor: ${loaded.error}\n`);
      return 2;
    }
    const facts = await gatherFacts({
      config: loaded.config,
      configPath: typeof args.config === "string" ? resolve(args.config) : null,
      env: io.env,
      now: io.now(),
      projectDir: resolve(typeof args.project === "string" ? args.project : process.cwd()),
      routerUrl: typeof args.router === "string" ? args.router : null,
      opencodeBin: typeof args.opencode === "string" ? args.opencode : null,
      upstream: Boolean(args.upstream),
      db: typeof args.db === "string" ? args.db : null,
    });
    const results = runChecks(facts);
    const code = exitCode(results);
    const head = { mode: facts.mode, routerUrl: facts.routerUrl, exitCode: code };
    io.stdout.write(args.json ? renderJson(results, head) : renderText(results, head));
    return code;
  },
});
