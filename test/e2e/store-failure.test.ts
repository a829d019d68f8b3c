// Issue 21's store-failure attack, against a real server (`startServer`: the
// gate in front of a scripted model, a real SQLite file): a tree is stopped,
// then the database stops taking writes, once because its disk is full (a
// 2 MB tmpfs, filled) and once because its files are read-only (chattr +i on
// the database and its WAL: not even root can write them). While it lasts
// the stopped tree stays refused (fail closed) and an unknown session passes
// (fail open), each counted on /metrics and logged once; /progress answers
// 503 (the plugin keeps its reports), /health says db_writable: false. When
// the disk is freed the waiting writes land. Both faults need root (mount,
// chattr); without it the test is skipped and says why.
import { execFileSync } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, unlinkSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../router-ext/server/start.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { routerEnv } from "../helpers/router-env.ts";
import { transition } from "../helpers/wire-fixtures.ts";

const ADMIN = "store-failure-admin-token";

/** Runs a privileged command: directly as root, else through `sudo -n`; false when neither works. */
function privileged(cmd: string, args: string[]): boolean {
  const [file, argv] = process.getuid?.() === 0 ? [cmd, args] : ["sudo", ["-n", cmd, ...args]];
  try {
    execFileSync(file as string, argv as string[], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
const canProbe = mkdtempSync(join(tmpdir(), "sg-priv-"));
const ROOT_OK = privileged("mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", canProbe]);
if (ROOT_OK) privileged("umount", [canProbe]);
rmSync(canProbe, { recursive: true, force: true });
if (!ROOT_OK) console.warn("store-failure.test.ts skipped: mount and chattr need root or passwordless sudo");

/** Fills the file system holding `dir` until it has no byte left. */
function fill(dir: string): string {
  const path = join(dir, "filler");
  const fd = openSync(path, "w");
  const block = Buffer.alloc(64 * 1024, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOSPC") throw err;
    try {
      for (;;) writeSync(fd, block, 0, 512);
    } catch {
      // full to the last block
    }
  } finally {
    closeSync(fd);
  }
  return path;
}

describe.skipIf(!ROOT_OK)("a stopped tree stays stopped when the database cannot be written", () => {
  let dir: string;
  let model: ModelServer;
  const started: RunningServer[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sg-store-failure-"));
    model = await startModelServer({ script: () => ({ kind: "text", text: "spent" }) });
  });
  afterAll(async () => {
    for (const s of started) await s.close();
    await model?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A server on `dbPath` with a stopped tree "ses_root" (child "ses_child" learnt by the gate). */
  async function serveWithStoppedTree(name: string, dbPath: string) {
    const lines: string[] = [];
    const srv = await startServer({
      port: 0,
      dbPath,
      root: null,
      upstream: model.url,
      env: routerEnv(join(dir, name), { STALLGUARD_ADMIN_TOKEN: ADMIN }),
      log: (l) => lines.push(l),
    });
    started.push(srv);
    const key = srv.clientKeys[0]?.key ?? "";
    const post = (path: string, token: string, body: unknown, headers: Record<string, string> = {}) =>
      fetch(`${srv.url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${token}`, ...headers },
        body: JSON.stringify(body),
      });
    const chat = (session: string, parent?: string) =>
      post(
        "/v1/chat/completions",
        key,
        { model: "m", messages: [] },
        {
          "x-session-id": session,
          ...(parent ? { "x-parent-session-id": parent } : {}),
        },
      ).then(async (r) => ({ status: r.status, body: await r.text() }));
    const health = async () => (await (await fetch(`${srv.url}/health`)).json()) as Record<string, unknown>;
    const metrics = async () => (await fetch(`${srv.url}/metrics`)).text();
    const progress = (at: number) =>
      post("/progress", srv.pluginToken, [transition(`ses_p${at}`, null, "build", "ok", "stalling", at)]);

    expect((await chat("ses_child", "ses_root")).status).toBe(200);
    expect((await post("/api/trees/ses_root/stop", ADMIN, { by: "ops" })).status).toBe(200);
    expect((await chat("ses_child")).status).toBe(403);
    return { srv, lines, chat, health, metrics, progress };
  }

  /** What must hold while writes fail; returns how many model requests the unknown session made. */
  async function duringFailure(s: Awaited<ReturnType<typeof serveWithStoppedTree>>) {
    // The store learns that writes fail when a batch meets the file (at most 50 ms
    // after a request; /health writes what waits first): one request, then it knows.
    expect((await s.chat("ses_child")).status).toBe(403);
    await expect.poll(async () => (await s.health()).pending_writes, { timeout: 5000 }).toBeGreaterThan(0);
    const before = model.requests.length;
    for (let i = 0; i < 10; i++) {
      expect((await s.chat("ses_child")).status).toBe(403);
      expect((await s.chat(`ses_new_child${i}`, "ses_child")).status).toBe(403);
      expect((await s.chat("ses_root")).status).toBe(403);
    }
    expect(model.requests.length).toBe(before); // the stopped tree never reached the model
    const open = await s.chat("ses_unknown");
    expect(open.status).toBe(200); // fail open for a session nobody stopped
    expect(model.requests.length).toBe(before + 1);
    const p = await s.progress(1_800_000_000_000);
    expect(p.status).toBe(503);
    expect(p.headers.get("retry-after")).toBe("1");
    const h = await s.health();
    expect(h).toMatchObject({ db: "ok", db_writable: false });
    expect(h.pending_writes).toBeGreaterThan(0);
    const m = await s.metrics();
    expect(m).toMatch(/^stallguard_gate_degraded_decisions_total\{outcome="refused"\} \d{2,}$/m);
    expect(m).toMatch(/^stallguard_gate_degraded_decisions_total\{outcome="passed"\} 1$/m);
    expect(m).toMatch(/^stallguard_store_writes_failing 1$/m);
    // Logged once for the whole spell, not once per request.
    expect(s.lines.filter((l) => l.includes("store: writes failing"))).toHaveLength(1);
    expect(s.lines.filter((l) => l.includes("gate: the store cannot write"))).toHaveLength(1);
    expect(s.lines.some((l) => l.includes("let through"))).toBe(false);
  }

  /** The tree's refusal and the requests as the file holds them, through a second connection. */
  function stored(dbPath: string) {
    const db = new Database(dbPath, { readonly: true, fileMustExist: true });
    try {
      return {
        tree: db
          .prepare("SELECT state, changed_by FROM refusals WHERE scope = 'tree' AND key = 'ses_root'")
          .get(),
        requests: db
          .prepare(
            "SELECT session_id, status, refused FROM requests WHERE session_id IN ('ses_unknown', 'ses_new_child0') ORDER BY session_id",
          )
          .all(),
      };
    } finally {
      db.close();
    }
  }

  it("a full disk (a 2 MB tmpfs): refused stays refused, unknown passes, writes land once there is room", async () => {
    const mnt = join(dir, "tmpfs");
    mkdirSync(mnt);
    expect(privileged("mount", ["-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", mnt])).toBe(true);
    try {
      const dbPath = join(mnt, "stallguard.db");
      const s = await serveWithStoppedTree("full", dbPath);
      const filler = fill(mnt);
      await duringFailure(s);
      expect(stored(dbPath)).toEqual({ tree: { state: "stopped", changed_by: "ops" }, requests: [] });

      unlinkSync(filler);
      await expect.poll(async () => (await s.health()).pending_writes, { timeout: 10_000 }).toBe(0);
      expect((await s.health()).db_writable).toBe(true);
      expect(stored(dbPath).requests).toEqual([
        { session_id: "ses_new_child0", status: 403, refused: 1 },
        { session_id: "ses_unknown", status: 200, refused: 0 },
      ]);
      expect((await s.progress(1_800_000_000_001)).status).toBe(200);
      expect(s.lines.some((l) => l.includes("store: writes work again"))).toBe(true);
      await s.srv.close();
    } finally {
      privileged("umount", ["-l", mnt]);
    }
  });

  it("a read-only file (chattr +i on the database and its WAL): the same, and Resume works once it is writable", async () => {
    const dbPath = join(dir, "ro", "stallguard.db");
    const s = await serveWithStoppedTree("ro", dbPath);
    const files = [dbPath, `${dbPath}-wal`];
    expect(privileged("chattr", ["+i", ...files])).toBe(true);
    try {
      await duringFailure(s);
      const resume = await fetch(`${s.srv.url}/api/trees/ses_root/resume`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
        body: "{}",
      });
      expect(resume.status).toBe(503); // not stored, so not done: the tree stays refused
      expect((await s.chat("ses_child")).status).toBe(403);
    } finally {
      privileged("chattr", ["-i", ...files]);
    }
    await expect.poll(async () => (await s.health()).pending_writes, { timeout: 10_000 }).toBe(0);
    expect(stored(dbPath).tree).toEqual({ state: "stopped", changed_by: "ops" });
    const resume = await fetch(`${s.srv.url}/api/trees/ses_root/resume`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${ADMIN}` },
      body: "{}",
    });
    expect(resume.status).toBe(200);
    expect((await s.chat("ses_child")).status).toBe(200);
  });
});
