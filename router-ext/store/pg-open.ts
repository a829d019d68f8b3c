// Opens stallguard's PostgreSQL database for serve (and doctor): the target
// checked (no password in it), the password from the environment, the pool
// opened, the migrations applied under their lock. A failure says what to fix
// in words an operator can act on, and names the target without any secret.
import { migratePg } from "./pg-migrate.ts";
import { pgPassword } from "./pg-password.ts";
import { openPgSql, type PgSql } from "./pg-sql.ts";
import { type PgTarget, parsePgTarget, showPgTarget } from "./pg-target.ts";

/** An operator's reading of a connection error (node-postgres words and codes). */
export function pgProblem(err: Error & { code?: string }): string {
  const m = err.message;
  if (/client password must be a string|no password was provided/i.test(m))
    return "the server asks for a password: set STALLGUARD_PG_PASSWORD or STALLGUARD_PG_PASSWORD_FILE";
  if (err.code === "28P01") return "password authentication failed (wrong password or user)";
  if (err.code === "3D000")
    return "the database does not exist: create it (createdb) and give the user ownership";
  if (err.code === "ECONNREFUSED") return "nothing accepts connections there (is PostgreSQL running?)";
  if (err.code === "ENOTFOUND") return "the host name does not resolve";
  return m;
}

export interface OpenedPg {
  sql: PgSql;
  target: PgTarget;
  password: string | undefined;
  /** Migration versions this start applied (none when another replica did). */
  applied: number[];
}

/** Opens and migrates the database `url` names; throws an Error fit to print when it cannot. */
export async function openPgDatabase(
  url: string,
  env: NodeJS.ProcessEnv,
  log: (line: string) => void,
): Promise<OpenedPg> {
  const target = parsePgTarget(url);
  const password = pgPassword(env);
  const sql = await openPgSql({
    target,
    password,
    onError: (err) => log(`store: PostgreSQL connection lost (${pgProblem(err)})`),
  });
  try {
    const applied = await migratePg(sql);
    return { sql, target, password, applied };
  } catch (err) {
    await sql.close().catch(() => {});
    throw new Error(
      `cannot open the PostgreSQL database ${showPgTarget(target)}: ${pgProblem(err as Error)}`,
    );
  }
}
