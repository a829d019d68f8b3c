// `stallguard serve`: the router extension. Flags override the config files,
// so one command starts an isolated instance (the tests do exactly that).
import { defineCommand } from "citty";
import { ConfigError, startServer } from "../server/start.ts";

function parsePort(raw: string | undefined): number | undefined | Error {
  if (raw === undefined || raw === "") return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 && n <= 65535 ? n : new Error(`--port: not a port number: ${raw}`);
}

export default defineCommand({
  meta: {
    name: "serve",
    description: "Run the router extension (progress judge, gate, admin page, /metrics).",
  },
  args: {
    port: { type: "string", description: "Listen port (0 = any free port). Default: server.port (4870)" },
    host: { type: "string", description: "Listen address. Default 127.0.0.1; others need both tokens set" },
    db: { type: "string", description: "SQLite file. Default: $XDG_STATE_HOME/stallguard/stallguard.db" },
    upstream: { type: "string", description: "The model endpoint's OpenAI base URL, ending in /v1" },
    config: { type: "string", description: "A YAML file used instead of config/config.local.yaml" },
  },
  async run({ args }) {
    const port = parsePort(args.port);
    if (port instanceof Error) {
      console.error(`stallguard serve: ${port.message}`);
      process.exit(1);
    }
    let server: Awaited<ReturnType<typeof startServer>>;
    try {
      server = await startServer({
        port,
        host: args.host || undefined,
        dbPath: args.db || undefined,
        upstream: args.upstream || undefined,
        configPath: args.config || undefined,
        watchdog: true,
      });
    } catch (err) {
      const msg = err instanceof ConfigError ? err.message : `cannot start: ${(err as Error).message}`;
      console.error(`stallguard serve: ${msg}`);
      process.exit(1);
    }
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      console.error(`stallguard serve: ${signal}, shutting down`);
      const force = setTimeout(() => process.exit(1), 5000);
      force.unref();
      void server.close().then(
        () => process.exit(0),
        (err: unknown) => {
          console.error(`stallguard serve: close failed: ${(err as Error).message}`);
          process.exit(1);
        },
      );
    };
    process.once("SIGINT", () => stop("SIGINT"));
    process.once("SIGTERM", () => stop("SIGTERM"));
  },
});
