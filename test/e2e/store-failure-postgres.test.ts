// Issue 21's store-failure attack on PostgreSQL (test/e2e/store-failure.test.ts
// is the SQLite one): a real server on a real PostgreSQL with a stopped tree,
// then the PostgreSQL server is stopped under it. While it is down the stopped
// tree stays refused (fail closed, from memory), an unknown session passes
// (fail open), /progress answers 503 and /health says db_writable: false;
// once PostgreSQL is back the router recovers by itself.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { type PgServer, pgBin, pgTitle, startPostgres } from "../helpers/postgres.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { transition } from "../helpers/wire-fixtures.ts";

const ADMIN = "pg-store-failure-admin-token";

describe.skipIf(!pgBin)(pgTitle("a stopped tree stays stopped when PostgreSQL goes away"), () => {
  let dir: string;
  let pg: PgServer;
  let model: ModelServer;
  let srv: RunningServer;
  const lines: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-pg-failure-"));
    pg = await startPostgres();
    model = await startModelServer({ script: () => ({ kind: "text", text: "spent" }) });
    srv = await startServer({
      port: 0,
      dbPath: pg.url,
      root: null,
      upstream: model.url,
      env: routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_PG_PASSWORD: pg.password }),
      log: (l) => lines.push(l),
    });
  });
  afterAll(async () => {
    await srv?.close();
    await model?.close();
    await pg?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const post = (path: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${srv.url}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
      body: JSON.stringify(body),
    });
  const chat = async (session: string, parent?: string) =>
    (
      await post(
        "/v1/chat/completions",
        srv.clientKeys[0]?.key ?? "",
        { model: "m", messages: [] },
        { "x-session-id": session, ...(parent ? { "x-parent-session-id": parent } : {}) },
      )
    ).status;
  const health = async () => (await (await fetch(`${srv.url}/health`)).json()) as Record<string, unknown>;
  const progress = (at: number) =>
    post("/progress", srv.pluginToken, [transition(`ses_p${at}`, null, "build", "ok", "stalling", at)]);

  it("PostgreSQL stopped: refused stays refused, unknown passes, /progress 503; back up: it recovers", async () => {
    expect(await chat("ses_child", "ses_root")).toBe(200);
    expect((await post("/api/trees/ses_root/stop", ADMIN, { by: "ops" })).status).toBe(200);
    expect(await chat("ses_child")).toBe(403);

    pg.stopServer();
    const before = model.requests.length;
    for (let i = 0; i < 5; i++) {
      expect(await chat("ses_child")).toBe(403);
      expect(await chat(`ses_new_child${i}`, "ses_child")).toBe(403);
      expect(await chat("ses_root")).toBe(403);
    }
    expect(model.requests.length).toBe(before); // the stopped tree never reached the model
    expect(await chat("ses_unknown")).toBe(200); // fail open for a session nobody stopped
    const p = await progress(1_800_000_000_000);
    expect(p.status).toBe(503);
    expect(await health()).toMatchObject({ db_writable: false });
    expect(lines.some((l) => l.includes("let through"))).toBe(false);

    pg.startServer();
    await expect.poll(async () => (await health()).db_writable, { timeout: 15_000 }).toBe(true);
    expect((await progress(1_800_000_000_001)).status).toBe(200);
    expect(await chat("ses_child")).toBe(403);
    expect((await post("/api/trees/ses_root/resume", ADMIN, {})).status).toBe(200);
    expect(await chat("ses_child")).toBe(200);
  });
});
