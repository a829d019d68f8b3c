// `stallguard doctor`'s checks of a PostgreSQL store (server.db or --db is a
// postgres:// URL): the password source, the connection, the migrations and
// the replicas alive on it. Pure functions of PgStoreFact (pg-facts.ts).
import type { CheckResult } from "./checks.ts";
import type { PgRunFact, PgStoreFact } from "./pg-facts.ts";

const result = (
  id: string,
  status: CheckResult["status"],
  needed: boolean,
  detail: string,
  fix: string | null = null,
): CheckResult => ({ id, status, needed, detail, fix });

const PASSWORD_FIX =
  "set STALLGUARD_PG_PASSWORD, or STALLGUARD_PG_PASSWORD_FILE=/absolute/path of a file with mode 0600 (never in the URL or a config file)";

export function checkPgPassword(p: PgStoreFact): CheckResult {
  const pw = p.password;
  if (pw.kind === "env") return result("pg.password", "pass", true, "from STALLGUARD_PG_PASSWORD");
  if (pw.kind === "file")
    return result(
      "pg.password",
      "pass",
      true,
      `from STALLGUARD_PG_PASSWORD_FILE (${pw.path}, no access for others)`,
    );
  if (pw.kind === "bad") return result("pg.password", "fail", true, pw.problem, PASSWORD_FIX);
  return result(
    "pg.password",
    "fail",
    false,
    "neither STALLGUARD_PG_PASSWORD nor STALLGUARD_PG_PASSWORD_FILE is set (fine only when the server trusts this host or takes a client certificate)",
    PASSWORD_FIX,
  );
}

export function checkPgConnection(p: PgStoreFact): CheckResult {
  const c = p.connection;
  if (c.ok) return result("postgres", "pass", true, `connected to ${p.target}`);
  return result(
    "postgres",
    "fail",
    true,
    `cannot connect to ${p.address ? `${p.address} (${p.target})` : p.target}: ${c.problem}${c.code ? ` [${c.code}]` : ""}`,
    "start PostgreSQL or fix the URL in --db / server.db; the password in STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE",
  );
}

export function checkPgMigrations(p: PgStoreFact): CheckResult {
  const s = p.schema;
  if (!s) return result("pg.schema", "skip", true, "needs the connection");
  const migrate = "start stallguard serve on this database (the first replica migrates, under a lock)";
  if (s.version < s.newest)
    return result(
      "pg.schema",
      "fail",
      false,
      `schema version ${s.version}, this build knows ${s.newest}: serve will migrate on start`,
      migrate,
    );
  // Feature migrations interleave: one below the highest can still be missing.
  if (s.version === s.newest && s.pending.length > 0)
    return result(
      "pg.schema",
      "fail",
      false,
      `schema version ${s.version}, but this build's migration(s) ${s.pending.join(", ")} not applied: serve will migrate on start`,
      migrate,
    );
  if (s.version === s.newest)
    return result("pg.schema", "pass", true, `schema version ${s.version}, this build's newest`);
  return result(
    "pg.schema",
    "fail",
    true,
    `schema version ${s.version} is newer than this build's ${s.newest}: this stallguard is older than the database: upgrade`,
    "install the stallguard the replicas run (serve refuses a database newer than itself)",
  );
}

/** A run is alive while it has not stopped and its mark is at most 3 alive intervals old. */
export function aliveRuns(p: PgStoreFact, now: number): PgRunFact[] {
  return (p.runs ?? []).filter((r) => r.stoppedAt === null && now - r.aliveAt <= 3 * p.aliveMs);
}

const ago = (ms: number) => `${Math.max(0, Math.round(ms / 1000))}s ago`;

export function checkPgReplicas(p: PgStoreFact, now: number): CheckResult {
  if (!p.runs) return result("replicas", "skip", false, "needs the connection and a migrated database");
  const alive = aliveRuns(p, now);
  if (alive.length === 0) {
    const last = [...p.runs].sort((a, b) => b.aliveAt - a.aliveAt)[0];
    const seen = last ? `; the last one (pid ${last.pid}) was alive ${ago(now - last.aliveAt)}` : "";
    return result(
      "replicas",
      "fail",
      false,
      `no stallguard serve alive on this database${seen}`,
      "start the replicas (systemctl start stallguard@<name>.service, see README: Team deployment)",
    );
  }
  const list = alive
    .map((r) => `run ${r.seq} (pid ${r.pid}, ${r.version}) alive ${ago(now - r.aliveAt)}`)
    .join("; ");
  return result("replicas", "pass", false, `${alive.length} alive: ${list}`);
}

/** The PostgreSQL checks, in order; none when the store is SQLite. */
export function checkPgStore(p: PgStoreFact | undefined, now: number): CheckResult[] {
  if (!p) return [];
  return [checkPgPassword(p), checkPgConnection(p), checkPgMigrations(p), checkPgReplicas(p, now)];
}
