// The only place that opens the SQLite file: WAL journal, synchronous=NORMAL
// (a commit survives a process kill; only an OS crash can lose the last
// transactions), a busy timeout for a second reader such as the CLI, and the
// migrations applied before anything else touches it. The file (and its WAL
// and shm companions) is 0600, a folder it creates 0700. A path that is not
// stallguard's to use (a folder, a URL, another program's database) is refused
// before anything is touched (db-target.ts).
import { closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";
import Database from "better-sqlite3";
import { privateDir, privateFile } from "../../io/secret-files.ts";
import { checkDbTarget, STALLGUARD_APPLICATION_ID } from "./db-target.ts";
import { migrate } from "./migrations.ts";

/** $XDG_STATE_HOME/stallguard/stallguard.db, else ~/.local/state/stallguard/stallguard.db. */
export function defaultDbPath(env: NodeJS.ProcessEnv = process.env): string {
  const state = env.XDG_STATE_HOME?.startsWith("/") ? env.XDG_STATE_HOME : join(homedir(), ".local", "state");
  return join(state, "stallguard", "stallguard.db");
}

export interface OpenDatabaseOptions {
  busyTimeoutMs?: number;
  /** Called with every SQL statement run (tracing; the crash-safety test kills the process from here). */
  verbose?: (sql?: unknown) => void;
}

/**
 * Creates the database file 0600 before SQLite does (it would use the umask,
 * 0644), tightens an existing one and its WAL and shm files, and makes our own
 * folder 0700. A folder the user chose (--db /some/dir/x.db) is created 0700
 * but otherwise left as it is.
 */
function privateDbFile(path: string): void {
  const dir = dirname(path);
  if (basename(dir) === "stallguard") privateDir(dir);
  else mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!existsSync(path)) closeSync(openSync(path, "a", 0o600));
  for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) privateFile(f);
}

/**
 * The marker db-target.ts reads from the file's header next time. A write lock
 * held by another process only postpones it to the next start.
 */
function markOwn(db: Database.Database): void {
  if (db.pragma("application_id", { simple: true }) === STALLGUARD_APPLICATION_ID) return;
  try {
    db.pragma(`application_id = ${STALLGUARD_APPLICATION_ID}`);
  } catch {
    // busy: set on a later open
  }
}

/** Opens (creating when missing) and migrates the database at `path` (":memory:" for tests). */
export function openDatabase(path: string, opts: OpenDatabaseOptions = {}): Database.Database {
  if (checkDbTarget(path) !== "memory") privateDbFile(path);
  let db: Database.Database;
  try {
    db = new Database(path, opts.verbose ? { verbose: opts.verbose } : {});
  } catch (err) {
    throw new Error(`cannot open the database ${path}: ${(err as Error).message}`);
  }
  try {
    db.pragma("journal_mode = WAL");
    connectionPragmas(db, opts.busyTimeoutMs ?? 5000);
    migrate(db);
    markOwn(db);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** The settings every connection to the file needs (WAL is the file's own, set once by openDatabase). */
export function connectionPragmas(db: Database.Database, busyTimeoutMs: number): void {
  db.pragma("synchronous = NORMAL");
  db.pragma(`busy_timeout = ${Math.max(0, Math.floor(busyTimeoutMs))}`);
  db.pragma("foreign_keys = ON");
}

/**
 * A second connection to a file openDatabase opened and migrated (the gate's
 * writer thread has one): it never creates, migrates or marks the file.
 */
export function openWriterConnection(path: string, busyTimeoutMs: number): Database.Database {
  const db = new Database(path, { fileMustExist: true });
  try {
    connectionPragmas(db, busyTimeoutMs);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}
