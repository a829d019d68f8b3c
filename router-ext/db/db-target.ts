// What stallguard's own database path (serve --db, server.db) may name,
// checked before anything touches it: a new file, an empty one, or a
// database that is already stallguard's. A folder, a database URL (serve
// takes postgres:// before it comes here: router-ext/store/pg-target.ts), a file that is not SQLite, or a
// SQLite database with other tables and no stallguard marker (opencode.db, for
// one) is an error naming the path, and the path is left as it was: no chmod,
// no tables, no -wal or -shm files.
import { statSync } from "node:fs";
import { join } from "node:path";
import { readSqliteSummary, type SqliteSummary } from "./sqlite-schema.ts";

/** PRAGMA application_id of a stallguard database ("SGRD"), set on open. */
export const STALLGUARD_APPLICATION_ID = 0x53475244;

/** Tables every stallguard database has had since its first migration (databases from before the id). */
const OWN_TABLES = ["schema_migrations", "watchdog_ticks"];

const URL_LIKE = /^[a-z][a-z0-9+.-]*:\/\//i;

export class DbTargetError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DbTargetError";
  }
}

export type DbTarget = "memory" | "new" | "stallguard";

const untouched = "; it was left as it was";

function ours(s: SqliteSummary): boolean {
  if (s.applicationId === STALLGUARD_APPLICATION_ID) return true;
  return s.applicationId === 0 && (s.tables.length === 0 || OWN_TABLES.every((t) => s.tables.includes(t)));
}

function foreign(path: string, s: SqliteSummary): DbTargetError {
  const names = s.tables.slice(0, 6).join(", ");
  const more = s.tables.length > 6 ? ", ..." : "";
  const what =
    s.tables.length > 0
      ? `it holds ${s.tables.length} other table(s): ${names}${more}`
      : `its application id is ${s.applicationId}`;
  return new DbTargetError(`${path} is a SQLite database that is not stallguard's (${what})${untouched}`);
}

/**
 * What `path` is, or a DbTargetError saying why stallguard must not use it.
 * Reads only (the file's header and schema pages); never creates or changes anything.
 */
export function checkDbTarget(path: string): DbTarget {
  if (path === ":memory:") return "memory";
  if (URL_LIKE.test(path))
    throw new DbTargetError(
      /^postgres(ql)?:\/\//i.test(path)
        ? `${path} is a PostgreSQL store: only \`stallguard serve\` uses one; this command reads a SQLite file${untouched}`
        : `${path} is a database URL stallguard does not use: its store is a SQLite file path or postgres://user@host:port/database${untouched}`,
    );
  let st: ReturnType<typeof statSync>;
  try {
    st = statSync(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return "new";
    throw new DbTargetError(`${path}: ${(err as Error).message}`);
  }
  if (st.isDirectory())
    throw new DbTargetError(
      `${path} is a folder; give a file path, e.g. ${join(path, "stallguard.db")}${untouched}`,
    );
  if (!st.isFile()) throw new DbTargetError(`${path} is not a regular file${untouched}`);
  let summary: ReturnType<typeof readSqliteSummary>;
  try {
    summary = readSqliteSummary(path);
  } catch (err) {
    throw new DbTargetError(`${path} cannot be read: ${(err as Error).message}`);
  }
  if (summary === null) return "new";
  if (summary === "not sqlite") throw new DbTargetError(`${path} is not a SQLite database${untouched}`);
  if (!ours(summary)) throw foreign(path, summary);
  return "stallguard";
}
