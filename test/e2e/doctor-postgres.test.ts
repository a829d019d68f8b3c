// `stallguard doctor` on a team's router: a real PostgreSQL (test/helpers/
// postgres.ts), one real `stallguard serve` replica on it (the built bundle),
// the real opencode binary and the plugin installed in a temp home. Doctor
// with --db postgres://... says where the password comes from, that the
// connection works, that the migrations are current and that one replica is
// alive, and exits 0; with PostgreSQL stopped the connection check fails with
// a line naming host:port and the error code, and the exit status is 1.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "../../router-ext/cli/run.ts";
import { type ServeProcess, spawnServe } from "../helpers/attack-tools.ts";
import { testIo } from "../helpers/cli-io.ts";
import { OPENCODE_BIN, REPO } from "../helpers/opencode.ts";
import { type PgServer, pgBin, pgTitle, startPostgres } from "../helpers/postgres.ts";
import { routerEnv } from "../helpers/router-env.ts";

const ADMIN = "doctor-pg-admin-token";
const PLUGIN = "doctor-pg-plugin-token";

interface Check {
  id: string;
  status: string;
  detail: string;
}

describe.skipIf(!pgBin)(pgTitle("stallguard doctor on a PostgreSQL store with one replica"), () => {
  let tmp: string, home: string, config: string;
  let pg: PgServer;
  let serve: ServeProcess;
  let url: string;
  const tokens = { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_TOKEN: PLUGIN };

  async function doctor() {
    const t = testIo(home, {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      XDG_CONFIG_HOME: join(home, ".config"),
      STALLGUARD_PG_PASSWORD: pg.password,
      ...tokens,
    });
    const args = ["doctor", "--json", "--router", url, "--db", pg.url, "--config", config];
    const code = await run([...args, "--project", home, "--opencode", OPENCODE_BIN], t.io);
    const out = JSON.parse(t.out()) as { exit_code: number; checks: Check[] };
    const check = (id: string) => out.checks.find((c) => c.id === id);
    return { code, out, check };
  }

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "sg-doctor-pg-"));
    home = join(tmp, "home");
    mkdirSync(home, { recursive: true });
    config = join(tmp, "local.yaml");
    // mode warn needs no provider at the gate; no watchdog, so no tick to wait for.
    writeFileSync(config, "progress:\n  mode: warn\nwatchdog:\n  enabled: false\n");
    pg = await startPostgres();
    serve = spawnServe(
      ["--db", pg.url, "--config", config],
      routerEnv(join(tmp, "replica"), {
        ...tokens,
        STALLGUARD_PG_PASSWORD: pg.password,
        STALLGUARD_REPLICA: "a",
      }),
    );
    url = await serve.listening;
    const install = testIo(home, { XDG_CONFIG_HOME: join(home, ".config") });
    const bundle = join(REPO, "dist", "plugin", "stallguard.js");
    expect(await run(["install-plugin", "--from", bundle], install.io), install.err()).toBe(0);
  }, 120_000);

  afterAll(async () => {
    if (serve && serve.proc.exitCode === null) serve.proc.kill("SIGTERM");
    if (serve) await Promise.race([serve.exited, new Promise((r) => setTimeout(r, 6000))]);
    serve?.proc.kill("SIGKILL");
    await pg?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it("a running replica: password from the env, connected, schema current, one replica alive; exit 0", async () => {
    const d = await doctor();
    expect(d.code, JSON.stringify(d.out, null, 2)).toBe(0);
    expect(d.check("pg.password")).toMatchObject({ status: "pass", detail: "from STALLGUARD_PG_PASSWORD" });
    expect(d.check("postgres")).toMatchObject({ status: "pass", detail: `connected to ${pg.url}` });
    expect(d.check("pg.schema")?.status).toBe("pass");
    expect(d.check("pg.schema")?.detail).toMatch(/^schema version \d+, this build's newest$/);
    expect(d.check("replicas")?.status).toBe("pass");
    expect(d.check("replicas")?.detail).toMatch(
      new RegExp(`^1 alive: run \\d+ \\(pid ${serve.proc.pid}, \\S+\\) alive \\d+s ago$`),
    );
    expect(JSON.stringify(d.out)).not.toContain(pg.password);
  }, 60_000);

  it("PostgreSQL stopped: the connection check fails naming host:port and the code; exit 1", async () => {
    pg.stopServer();
    try {
      const d = await doctor();
      expect(d.code).toBe(1);
      expect(d.out.exit_code).toBe(1);
      expect(d.check("postgres")?.status).toBe("fail");
      expect(d.check("postgres")?.detail).toBe(
        `cannot connect to 127.0.0.1:${pg.port} (${pg.url}): nothing accepts connections there (is PostgreSQL running?) [ECONNREFUSED]`,
      );
      expect(d.check("pg.schema")?.status).toBe("skip");
      expect(d.check("replicas")?.status).toBe("skip");
      // What broke is the database: the replica's /health says so too, nothing else fails.
      const broken = d.out.checks.filter((c) => c.status === "fail").map((c) => c.id);
      expect(broken).toEqual(["router", "postgres"]);
      expect(d.check("router")?.detail).toMatch(/answers, database: error|does not take writes/);
    } finally {
      pg.startServer();
    }
  }, 60_000);
});
