// The built `stallguard serve` (dist/stallguard.mjs beside
// dist/watchdog-tick-worker.mjs, as `npm start` runs it) ticks its in-process
// watchdog on a thread of its own: a looping session in opencode's database
// (the synthetic stored shape, bench/core-opencode-db.ts) is flagged through
// the bundled thread, and nothing says the thread failed to start or a tick
// failed (either would fall back to the serving thread, or lose the tick).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { syntheticSession, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { type ServeProcess, spawnServe } from "../helpers/attack-tools.ts";
import { routerEnv } from "../helpers/router-env.ts";

const ADMIN = "watchdog-thread-admin-token";

describe("the built serve's watchdog ticks on its own thread", () => {
  let dir: string;
  let serve: ServeProcess;
  let url: string;
  const looping = syntheticSession(1, 20, { loopEvery: 1 });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-wd-thread-e2e-"));
    const share = join(dir, ".local", "share");
    mkdirSync(join(share, "opencode"), { recursive: true });
    const now = Date.now();
    writeOpencodeDb(join(share, "opencode", "opencode.db"), [
      { ...looping, info: { ...looping.info, time: { created: now - 60_000, updated: now - 1000 } } },
    ]);
    // Default knobs: the first in-process tick 5 s after start.
    serve = spawnServe(
      ["--db", join(dir, "sg.db")],
      routerEnv(dir, { STALLGUARD_ADMIN_TOKEN: ADMIN, XDG_DATA_HOME: share }),
    );
    url = await serve.listening;
  });
  afterAll(async () => {
    if (serve && serve.proc.exitCode === null && serve.proc.signalCode === null) serve.proc.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  });

  it("flags the looping session from opencode.db; no fallback, no failed tick", async () => {
    const row = async () => {
      const r = await fetch(`${url}/api/sessions`, { headers: { authorization: `Bearer ${ADMIN}` } });
      const body = (await r.json()) as { sessions: Array<Record<string, unknown>> };
      return body.sessions.find((s) => s.session_id === looping.info.id);
    };
    await expect.poll(row, { timeout: 30_000, interval: 250 }).toMatchObject({
      source: "watchdog",
      verdict: "looping",
    });
    expect(serve.output()).toMatch(/watchdog: ticking in-process every \d+s, on its own thread/);
    expect(serve.output()).not.toMatch(/its thread did not start|could not go to its thread|tick failed/);
    serve.proc.kill("SIGTERM");
    expect(await serve.exited).toBe(0);
  });
});
