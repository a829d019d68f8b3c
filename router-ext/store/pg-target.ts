// What `--db postgres://user@host:port/db` (or server.db) names, checked
// before anything connects: user, host, port and database only. A password in
// the URL is refused (config files and process lists are not secret stores):
// it comes from STALLGUARD_PG_PASSWORD or a 0600 file named by
// STALLGUARD_PG_PASSWORD_FILE (read by the shell that opens the pool).
export interface PgTarget {
  host: string;
  port: number;
  user: string;
  database: string;
}

export class PgTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PgTargetError";
  }
}

const PG_URL = /^postgres(?:ql)?:\/\//i;

/** True when a --db value names a PostgreSQL server rather than a SQLite file. */
export function isPgUrl(target: string): boolean {
  return PG_URL.test(target);
}

/** Shows the target without anything secret (there is none in a valid one). */
export function showPgTarget(t: PgTarget): string {
  return `postgres://${t.user}@${t.host}:${t.port}/${t.database}`;
}

/**
 * @example
 * parsePgTarget("postgres://stallguard@db.internal:5432/stallguard") // {host: "db.internal", port: 5432, user: "stallguard", database: "stallguard"}
 */
export function parsePgTarget(url: string): PgTarget {
  if (!isPgUrl(url)) throw new PgTargetError(`${url} is not a postgres:// URL`);
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new PgTargetError(
      "the postgres:// URL cannot be parsed: expected postgres://user@host:port/database",
    );
  }
  if (u.password)
    throw new PgTargetError(
      "the postgres:// URL holds a password: remove it and set STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE (a 0600 file) instead",
    );
  if (u.search || u.hash)
    throw new PgTargetError(
      "the postgres:// URL takes no ?options or #fragment: postgres://user@host:port/database",
    );
  const user = decodeURIComponent(u.username);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ""));
  const host = u.hostname.replace(/^\[(.*)\]$/, "$1");
  if (!user) throw new PgTargetError("the postgres:// URL names no user: postgres://user@host:port/database");
  if (!host) throw new PgTargetError("the postgres:// URL names no host");
  if (!database || database.includes("/"))
    throw new PgTargetError("the postgres:// URL names no database: postgres://user@host:port/database");
  const port = u.port ? Number(u.port) : 5432;
  return { host, port, user, database };
}
