// `stallguard serve --db` (the built CLI, a real process) on what is not
// stallguard's to use: a folder, the opencode.db a real `opencode run` wrote,
// and database URLs it cannot use (a postgres:// one with a password in it or
// no server behind it, another kind). Each exits non-zero with a message naming
// the path, and each is left exactly as it was: mode and bytes, no tables, no
// -wal or -shm.
import { spawnSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { freePort } from "../helpers/free-port.ts";
import { type ModelServer, startModelServer } from "../helpers/model-server.ts";
import { REPO, runOpencode } from "../helpers/opencode.ts";
import { tempDirForTests } from "../helpers/temp-dir.ts";
import { QUIET_LOCAL_YAML } from "../helpers/test-router.ts";

const CLI = join(REPO, "dist", "stallguard.mjs");

describe("stallguard serve --db refuses what is not its own database", () => {
  const tmp = tempDirForTests("sg-serve-db-");
  let model: ModelServer;
  let opencodeDb: string;
  let cleanupRun: () => void = () => {};

  beforeAll(async () => {
    writeFileSync(join(tmp, "local.yaml"), QUIET_LOCAL_YAML);
    model = await startModelServer({ script: () => ({ kind: "text", text: "hello" }) });
    const run = await runOpencode({ modelUrl: model.url, message: "say hi", timeoutMs: 90_000 });
    cleanupRun = run.cleanup;
    expect(run.code, run.stderr).toBe(0);
    opencodeDb = run.dbPath;
    chmodSync(opencodeDb, 0o644);
  }, 120_000);
  afterAll(async () => {
    cleanupRun();
    await model?.close();
  });

  /** serve as a user runs it; a serve that does start is stopped after 10 s (and fails the test). */
  function serve(db: string) {
    const r = spawnSync(
      "node",
      [CLI, "serve", "--port", "0", "--config", join(tmp, "local.yaml"), "--db", db],
      {
        cwd: tmp,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: join(tmp, "home") },
        encoding: "utf8",
        timeout: 10_000,
      },
    );
    return { code: r.status, out: `${r.stdout}${r.stderr}` };
  }

  const state = (path: string) => {
    const st = statSync(path);
    return {
      mode: (st.mode & 0o7777).toString(8),
      bytes: st.isFile() ? readFileSync(path).toString("base64") : readdirSync(path).sort().join(","),
      // opencode leaves its -wal and -shm behind: those are compared byte for byte too.
      companions: ["-wal", "-shm", "-journal"]
        .filter((s) => existsSync(`${path}${s}`))
        .map((s) => `${s}:${readFileSync(`${path}${s}`).toString("base64")}`),
    };
  };

  test("a folder: exit 1, the message names it, its mode and content unchanged", () => {
    const folder = join(tmp, "a-folder");
    mkdirSync(folder);
    writeFileSync(join(folder, "keep.txt"), "mine\n");
    chmodSync(folder, 0o755);
    const before = state(folder);
    const r = serve(folder);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(
      `stallguard serve: cannot start: --db (stallguard's own store, not opencode's database; that one is calibrate --db): ${folder} is a folder; give a file path, e.g. ${join(folder, "stallguard.db")}; it was left as it was`,
    );
    expect(state(folder)).toEqual(before);
    expect(before.mode).toBe("755");
  });

  test("the opencode.db a real opencode run wrote: exit 1 naming its tables, not a byte changed", () => {
    const before = state(opencodeDb);
    const r = serve(opencodeDb);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(`${opencodeDb} is a SQLite database that is not stallguard's (it holds`);
    expect(r.out).toMatch(/it holds \d+ other table\(s\): \w+, \w+/);
    expect(state(opencodeDb)).toEqual(before);
    expect(before.mode).toBe("644");
  });

  /** serve on a database URL it cannot use: exit 1, the message, nothing created. */
  function refusedUrl(url: string, says: string): string {
    const before = readdirSync(tmp).sort();
    const r = serve(url);
    expect(r.code, r.out).toBe(1);
    expect(r.out).toContain(says);
    expect(readdirSync(tmp).sort()).toEqual(before);
    return r.out;
  }

  test("a postgres:// URL with a password in it: exit 1, says where the password goes, never prints it", () => {
    const out = refusedUrl(
      "postgres://stallguard:hunter2secret@127.0.0.1:5432/stallguard",
      "the postgres:// URL holds a password: remove it and set STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE (a 0600 file) instead",
    );
    expect(out).not.toContain("hunter2secret");
  });

  test("a postgres:// URL where nothing listens, or another kind of URL: exit 1, says why, creates nothing", async () => {
    const port = await freePort();
    refusedUrl(
      `postgres://stallguard@127.0.0.1:${port}/stallguard`,
      `cannot open the PostgreSQL database postgres://stallguard@127.0.0.1:${port}/stallguard: nothing accepts connections there (is PostgreSQL running?)`,
    );
    refusedUrl(
      "mysql://stallguard@db.example:3306/stallguard",
      "mysql://stallguard@db.example:3306/stallguard is a database URL stallguard does not use: its store is a SQLite file path or postgres://user@host:port/database",
    );
    expect(existsSync(join(tmp, "mysql:"))).toBe(false);
  });

  test("--help says which database each --db is", () => {
    const help = (verb: string) =>
      spawnSync("node", [CLI, verb, "--help"], { encoding: "utf8", cwd: tmp }).stdout.replace(/\s+/g, " ");
    expect(help("serve")).toContain(
      "stallguard's own store: a SQLite file, or postgres://user@host:port/database for replicas (password from STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE); not opencode's database: that is calibrate --db",
    );
    expect(help("calibrate")).toContain(
      "opencode's database (opencode.db) to replay, read-only; not stallguard's own store (serve --db)",
    );
  });
});
