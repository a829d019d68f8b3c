// `stallguard serve`: the router extension. Flags override the config files,
// so one command starts an isolated instance (the tests do exactly that). It
// runs until the process is asked to stop, then closes (at most 5 s).
import { defineCommand } from "citty";
import { ConfigError, startServer } from "../server/start.ts";
import { stringArg } from "./args.ts";
import { type CliIo, warn } from "./io.ts";

function parsePort(raw: string | undefined): number | undefined | Error {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : new Error(`--port: not a port number: ${raw}`);
}

export default defineCommand({
  meta: {
    name: "serve",
    description: "Run the router extension (progress store, gate, admin page, /metrics).",
  },
  args: {
    port: stringArg("Listen port (0 = any free port). Default: server.port (4870)"),
    host: stringArg("Listen address. Default 127.0.0.1; others need both tokens set"),
    db: stringArg(
      "stallguard's own store: a SQLite file, or postgres://user@host:port/database for replicas (password from STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE); not opencode's database: that is calibrate --db. Default: $XDG_STATE_HOME/stallguard/stallguard.db",
    ),
    upstream: stringArg("The model endpoint's OpenAI base URL, ending in /v1"),
    config: stringArg("A YAML file used instead of config/config.local.yaml"),
  },
  async run({ args, data }): Promise<number> {
    const io = data as CliIo;
    const port = parsePort(args.port);
    if (port instanceof Error) {
      warn(io, `stallguard serve: ${port.message}`);
      return 1;
    }
    let server: Awaited<ReturnType<typeof startServer>>;
    try {
      server = await startServer({
        port,
        host: args.host || undefined,
        dbPath: args.db || undefined,
        upstream: args.upstream || undefined,
        configPath: args.config || undefined,
        env: io.env,
        now: io.now,
        log: (line) => io.stdout.write(`${line}\n`),
        watchdog: true,
      });
    } catch (err) {
      const msg = err instanceof ConfigError ? err.message : `cannot start: ${(err as Error).message}`;
      warn(io, `stallguard serve: ${msg}`);
      return 1;
    }
    const signal = await io.stopped;
    warn(io, `stallguard serve: ${signal}, shutting down`);
    let force: ReturnType<typeof setTimeout> | undefined;
    const forced = new Promise<number>((resolve) => {
      force = setTimeout(() => resolve(1), 5000);
      force.unref();
    });
    const closed = server.close().then(
      () => 0,
      (err: unknown) => {
        warn(io, `stallguard serve: close failed: ${(err as Error).message}`);
        return 1;
      },
    );
    const code = await Promise.race([closed, forced]);
    clearTimeout(force);
    return code;
  },
});
