// The built `stallguard serve` (dist/stallguard.mjs beside
// dist/gate-writer-worker.mjs, as `npm start` runs it) on a SQLite file
// writes the gate's request records from its writer thread: /metrics says
// the thread writes, every answered request has its row (read from the file
// by another connection), and a SIGTERM ends the process cleanly with the
// last batch stored.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ServeProcess, spawnServe } from "../helpers/attack-tools.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv } from "../helpers/router-env.ts";

const ADMIN = "writer-thread-admin-token";
const CLIENT = "writer-thread-client-key";

describe("the built serve writes the gate's records from its writer thread", () => {
  let dir: string;
  let model: ModelServer;
  let serve: ServeProcess;
  let url: string;
  const dbPath = () => join(dir, "sg.db");

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-writer-e2e-"));
    model = await startModelServer({ script: () => ({ kind: "text", text: "ok" }) });
    serve = spawnServe(
      ["--db", dbPath(), "--upstream", model.url],
      routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_CLIENT_KEY: CLIENT }),
    );
    url = await serve.listening;
  });
  afterAll(async () => {
    if (serve.proc.exitCode === null && serve.proc.signalCode === null) serve.proc.kill("SIGKILL");
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const chat = async (i: number) => {
    const r = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        authorization: `Bearer ${CLIENT}`,
        "x-session-id": `ses_writer_${i % 4}`,
      },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }] }),
    });
    await r.text();
    return r.status;
  };
  const rows = () => {
    const db = new Database(dbPath(), { readonly: true });
    try {
      return db.prepare("SELECT session_id, status FROM requests ORDER BY seq").all() as Array<{
        session_id: string;
        status: number;
      }>;
    } finally {
      db.close();
    }
  };

  it("/metrics says the thread writes; 60 answered requests are 60 rows; SIGTERM keeps the last batch", async () => {
    const metrics = await (
      await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).text();
    expect(metrics).toMatch(/^stallguard_store_writer_thread 1$/m);
    const statuses: number[] = [];
    for (let round = 0; round < 3; round++)
      statuses.push(...(await Promise.all(Array.from({ length: 20 }, (_, i) => chat(round * 20 + i)))));
    expect(statuses).toEqual(Array(60).fill(200));
    serve.proc.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
    const stored = rows();
    expect(stored).toHaveLength(60);
    expect(new Set(stored.map((r) => r.session_id))).toEqual(
      new Set(["ses_writer_0", "ses_writer_1", "ses_writer_2", "ses_writer_3"]),
    );
    expect(serve.output()).not.toContain("writer thread");
  });
});
