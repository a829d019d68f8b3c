// A real PostgreSQL from Debian for the tests that need one: initdb in a temp
// folder, a free loopback port, its unix socket inside that folder. The
// superuser (pgadmin) connects over the socket only (trust; the folder is
// 0700); the test role `stallguard` has a password and connects over TCP on
// 127.0.0.1 with scram-sha-256, so the password path is the one exercised.
// PostgreSQL refuses to run as root: as root the server runs as the system
// user stallguard-pg (created once with useradd) through runuser.
// When the binaries are missing, suites skip and say so in their titles.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { freePort } from "./free-port.ts";

const PG_ROOT = "/usr/lib/postgresql";
const PG_USER = "stallguard-pg";
const ADMIN = "pgadmin";
export const PG_ROLE = "stallguard";

function findBin(): string | null {
  if (!existsSync(PG_ROOT)) return null;
  const versions = readdirSync(PG_ROOT)
    .filter((v) => /^\d+$/.test(v) && existsSync(join(PG_ROOT, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(PG_ROOT, versions[0], "bin") : null;
}

/** The folder of PostgreSQL's server binaries, or null when it is not installed. */
export const pgBin = findBin();

const reason =
  "skipped: PostgreSQL server binaries not found under /usr/lib/postgresql (apt-get install postgresql)";
if (!pgBin) console.warn(`stallguard tests: ${reason}`);

/** The suite's title, or, without PostgreSQL, that title with the reason it is skipped. */
export const pgTitle = (name: string): string => (pgBin ? name : `${name} [${reason}]`);

const asRoot = process.getuid?.() === 0;

function run(cmd: string, args: string[], what: string): string {
  const full = asRoot ? ["runuser", "-u", PG_USER, "--", cmd, ...args] : [cmd, ...args];
  const r = spawnSync(full[0] as string, full.slice(1), { encoding: "utf8", timeout: 60_000 });
  if (r.status !== 0)
    throw new Error(`${what} failed (${r.status}): ${r.stderr || r.stdout || r.error?.message}`);
  return r.stdout;
}

/** As root: the system user the server runs as (made once; a parallel suite may make it first). */
function pgOwner(): { uid: number; gid: number } | null {
  if (!asRoot) return null;
  const id = () => spawnSync("id", ["-u", PG_USER], { encoding: "utf8" });
  if (id().status !== 0)
    spawnSync("useradd", ["--system", "--no-create-home", "--shell", "/usr/sbin/nologin", PG_USER]);
  const uid = Number(id().stdout.trim());
  const gid = Number(spawnSync("id", ["-g", PG_USER], { encoding: "utf8" }).stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid)) throw new Error(`cannot create the user ${PG_USER}`);
  return { uid, gid };
}

export interface PgServer {
  /** postgres://stallguard@127.0.0.1:<port>/stallguard (no password in it). */
  url: string;
  password: string;
  port: number;
  /** A new empty database owned by the test role; its URL. */
  createDatabase(name: string): Promise<string>;
  /** pg_ctl stop -m fast (the data stays); startServer brings it back on the same port. */
  stopServer(): void;
  startServer(): void;
  /** pg_ctl restart -m fast: every connection is cut. */
  restart(): void;
  /** Stops the server and removes its folder. Safe to call twice. */
  stop(): Promise<void>;
}

function writeOwned(path: string, text: string, owner: { uid: number; gid: number } | null): void {
  writeFileSync(path, text, { mode: 0o600 });
  if (owner) chownSync(path, owner.uid, owner.gid);
}

async function admin<T>(dir: string, port: number, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ host: dir, port, user: ADMIN, database: "postgres" });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** initdb, start, and a password role with its own database. Call stop() in afterAll. */
export async function startPostgres(): Promise<PgServer> {
  if (!pgBin) throw new Error(reason);
  const bin = pgBin;
  const owner = pgOwner();
  const dir = mkdtempSync(join(tmpdir(), "stallguard-pg-"));
  if (owner) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, "data");
  const password = randomBytes(12).toString("hex");
  const ctl = (args: string[]) => run(join(bin, "pg_ctl"), ["-D", data, ...args], `pg_ctl ${args[0]}`);
  let stopped = false;
  const stopNow = () => {
    if (stopped) return;
    stopped = true;
    const full = [join(bin, "pg_ctl"), "-D", data, "stop", "-m", "immediate"];
    if (existsSync(join(data, "postmaster.pid")))
      spawnSync(
        asRoot ? "runuser" : (full[0] as string),
        asRoot ? ["-u", PG_USER, "--", ...full] : full.slice(1),
      );
    rmSync(dir, { recursive: true, force: true });
  };
  process.once("exit", stopNow);
  try {
    run(
      join(bin, "initdb"),
      ["-D", data, "-U", ADMIN, "-A", "trust", "-E", "UTF8", "--no-instructions"],
      "initdb",
    );
    const port = await freePort();
    const conf = [`port = ${port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${dir}'`];
    writeOwned(
      join(data, "postgresql.auto.conf"),
      `${[...conf, "fsync = off", "max_connections = 200"].join("\n")}\n`,
      owner,
    );
    writeOwned(
      join(data, "pg_hba.conf"),
      "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n",
      owner,
    );
    ctl(["start", "-w", "-t", "60", "-l", join(dir, "server.log")]);
    await admin(dir, port, async (c) => {
      await c.query(`CREATE ROLE ${PG_ROLE} LOGIN PASSWORD '${password}'`);
      await c.query(`CREATE DATABASE ${PG_ROLE} OWNER ${PG_ROLE}`);
    });
    const urlOf = (db: string) => `postgres://${PG_ROLE}@127.0.0.1:${port}/${db}`;
    return {
      url: urlOf(PG_ROLE),
      password,
      port,
      createDatabase: async (name) => {
        if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
        await admin(dir, port, (c) => c.query(`CREATE DATABASE ${name} OWNER ${PG_ROLE}`));
        return urlOf(name);
      },
      stopServer: () => ctl(["stop", "-w", "-m", "fast"]),
      startServer: () => ctl(["start", "-w", "-t", "60", "-l", join(dir, "server.log")]),
      restart: () => ctl(["restart", "-w", "-m", "fast", "-t", "60", "-l", join(dir, "server.log")]),
      stop: async () => {
        if (!stopped && existsSync(join(data, "postmaster.pid"))) ctl(["stop", "-w", "-m", "fast"]);
        stopNow();
        process.removeListener("exit", stopNow);
      },
    };
  } catch (err) {
    stopNow();
    process.removeListener("exit", stopNow);
    throw err;
  }
}
