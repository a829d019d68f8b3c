// GET /health: public, no token. Whether the database answers and takes
// writes, the schema version, the mode, the last watchdog tick and the live
// plugins; 503 when the database does not answer.
import { Hono } from "hono";
import type { Health } from "../../api/schemas.ts";
import { headersOnly } from "../../db/tables/plugin-links.ts";
import type { RouteDeps } from "./deps.ts";

/** @example app.route("/", healthRoutes({ ...routeDeps, version: "dev" })); */
export function healthRoutes(d: RouteDeps & { version: string }): Hono {
  const app = new Hono();
  app.get("/health", async (c) => {
    const health = await healthOf(d);
    return c.json(health, health.ok ? 200 : 503);
  });
  return app;
}

async function healthOf(d: RouteDeps & { version: string }): Promise<Health> {
  const { store, config, now, liveWindow } = d;
  let db = "ok";
  let version = 0;
  try {
    await store.ping();
    version = await store.schemaVersion();
  } catch (err) {
    db = `error: ${(err as Error).message}`;
  }
  const ok = db === "ok";
  const tick = ok ? await store.lastWatchdogTick() : null;
  // The store writes the gate's waiting batch first: plugins_headers_only reads the links it carries.
  const links = ok ? await store.pluginLinks(now() - liveWindow()) : [];
  return {
    ok: db === "ok",
    version: d.version,
    db,
    schema_version: version,
    mode: config.get().progress.mode,
    watchdog: tick
      ? {
          last_tick_at: tick.received_at,
          blind: tick.blind,
          flagged: tick.flagged,
          servers: tick.servers,
          sessions: tick.sessions,
          db: tick.db,
        }
      : null,
    plugins_live: ok ? await store.livePlugins(now() - liveWindow()) : 0,
    plugins_headers_only: headersOnly(links, {
      now: now(),
      liveWindowMs: liveWindow(),
      heartbeatMs: config.get().progress.heartbeat,
    }),
    db_writable: ok && (await store.writable()),
    max_progress_bytes: config.get().server.max_progress_bytes,
    pending_writes: store.writes.stats.pending,
  } satisfies Health;
}
