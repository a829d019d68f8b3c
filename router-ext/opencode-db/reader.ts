// opencode's own database, read strictly read-only: the one reader the
// watchdog and calibrate share. The file is never created or written (WAL: a
// reader neither blocks opencode nor is blocked by it), its shape is checked
// before anything is read, and only the session, message and part tables are
// touched (the same file holds opencode's credentials). A row that cannot be
// used is counted and skipped, never thrown on. Each part is cut to what the
// detection core reads as it is read (tool output hashed, then dropped), or a
// session is turned into the core's observations as it is read (calibrate),
// so no content outlives the read.
import { existsSync } from "node:fs";
import Database from "better-sqlite3";
import {
  isRec,
  type Observation,
  type Rec,
  SessionObserver,
  type StoredMessage,
  type StoredOptions,
  type StoredSession,
  storedInfo,
  storedPart,
} from "../../shared/index.ts";
import { inIdOrder, unreadPart } from "./part-rows.ts";

export type OpencodeDbProblem = "missing" | "unreadable" | "unexpected_shape";

/** Why the database cannot be read: absent, not openable, or not the shape this reader knows. */
export class OpencodeDbError extends Error {
  constructor(
    readonly kind: OpencodeDbProblem,
    readonly path: string,
    detail: string,
  ) {
    super(detail);
  }
}

export interface SessionRow {
  id: string;
  parentId: string | null;
  directory: string | null;
  title: string | null;
  /** Epoch ms. */
  created: number | null;
  updated: number | null;
}

export interface Rows<T> {
  rows: T[];
  /** Rows skipped because a field had the wrong type. */
  malformed: number;
}

export interface SessionMessages {
  messages: StoredMessage[];
  /** Message and part rows read, malformed ones included. */
  rows: number;
  malformed: number;
}

/** The columns every query below relies on; anything else in opencode's tables is ignored. */
const REQUIRED: Record<"session" | "message" | "part", readonly string[]> = {
  session: ["id", "parent_id", "directory", "title", "time_created", "time_updated"],
  message: ["id", "session_id", "time_created", "data"],
  part: ["id", "message_id", "session_id", "data"],
};

const SESSION_COLS = "id, parent_id, directory, title, time_created, time_updated";

const MAX_ID = 200;

function text(v: unknown): string | null | undefined {
  if (v === null) return null;
  return typeof v === "string" ? v : undefined;
}

function time(v: unknown): number | null | undefined {
  if (v === null) return null;
  return typeof v === "number" && Number.isFinite(v) ? v : undefined;
}

/** A session row with the types the schema promises; null when it has other ones. */
export function toSessionRow(r: Rec): SessionRow | null {
  const { id } = r;
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_ID) return null;
  const parentId = text(r.parent_id);
  const directory = text(r.directory);
  const title = text(r.title);
  const created = time(r.time_created);
  const updated = time(r.time_updated);
  if (parentId === undefined || directory === undefined || title === undefined) return null;
  if (created === undefined || updated === undefined) return null;
  if (parentId !== null && (parentId.length === 0 || parentId.length > MAX_ID)) return null;
  return { id, parentId, directory, title, created, updated };
}

function parseData(v: unknown): Rec | null {
  if (typeof v !== "string") return null;
  try {
    const parsed: unknown = JSON.parse(v);
    return isRec(parsed) ? parsed : null;
  } catch {
    return null;
  }
}

export class OpencodeDb {
  private readonly q: ReturnType<typeof statements>;

  private constructor(
    readonly path: string,
    private readonly db: Database.Database,
  ) {
    this.q = statements(db);
  }

  /**
   * Opens `path` read-only and checks its shape. Throws an OpencodeDbError:
   * missing (no such file), unreadable (cannot be opened, not SQLite) or
   * unexpected_shape (a table or column this reader needs is absent).
   */
  static open(path: string, opts: { busyTimeoutMs?: number } = {}): OpencodeDb {
    if (!existsSync(path))
      throw new OpencodeDbError("missing", path, `cannot open ${path} read-only: no such file`);
    let db: Database.Database | null = null;
    try {
      db = new Database(path, { readonly: true, fileMustExist: true });
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
      checkShape(db, path);
      return new OpencodeDb(path, db);
    } catch (err) {
      db?.close();
      if (err instanceof OpencodeDbError) throw err;
      throw new OpencodeDbError("unreadable", path, `cannot open ${path} read-only: ${openHint(path, err)}`);
    }
  }

  /** Runs `fn` in one read transaction: everything it reads is one snapshot of the file. */
  snapshot<T>(fn: () => T): T {
    return this.db.transaction(fn).deferred();
  }

  /** Sessions updated at or after `since` (epoch ms), newest first, at most `limit`. */
  updatedSince(since: number, limit: number): Rows<SessionRow> {
    return sessionRows(this.q.since.all(Math.floor(since), limit) as Rec[]);
  }

  /** Every session, oldest first. */
  allSessions(): Rows<SessionRow> {
    return sessionRows(this.q.all.all() as Rec[]);
  }

  /** One session; null when there is none, "malformed" when its row is unusable. */
  session(id: string): SessionRow | null | "malformed" {
    const r = this.q.one.get(id) as Rec | undefined;
    if (!r) return null;
    return toSessionRow(r) ?? "malformed";
  }

  /** A session's direct children, oldest first. */
  children(id: string): Rows<SessionRow> {
    return sessionRows(this.q.children.all(id) as Rec[]);
  }

  /**
   * A session's messages, oldest first, each with the parts the adapter reads,
   * cut to the fields it reads (shared/adapters/stored.ts): tool output hashed,
   * then dropped with every other part's content.
   */
  messages(sessionId: string): SessionMessages {
    const messages: StoredMessage[] = [];
    const read = this.read(
      sessionId,
      readEvery,
      storedPart,
      (data, id) => storedInfo(data, id, sessionId),
      (m) => messages.push(m),
    );
    return { messages, ...read };
  }

  /**
   * A session's observations (shared/adapters/stored.ts), made as it is read,
   * one message at a time: a message's parts are parsed when its turn comes
   * and dropped once observed, and the step parts the adapter never reads are
   * not parsed (part-rows.ts unreadPart). What calibrate --db replays; the same
   * observations as messages() handed to the adapter.
   */
  observations(
    session: StoredSession,
    opts: StoredOptions,
  ): { observations: Observation[]; rows: number; malformed: number } {
    const observer = new SessionObserver(session, opts);
    const read = this.read(
      session.id,
      unreadPart,
      keepPart,
      (data, id) => {
        // The observer reads the id, not the session id (it has the session). No property
        // is added that the message lacks: each one added per message cost an allocation.
        data.id = id;
        // messages() never keeps a message's summary (storedInfo says why): nor does this.
        if (data.summary !== undefined) data.summary = undefined;
        return data;
      },
      (m) => observer.add(m),
    );
    return { observations: observer.observations, ...read };
  }

  /**
   * A session's messages, oldest first, each handed to `emit` with its parts:
   * each part and info as `part` and `info` make it. The part rows are read
   * first and kept as their text by message; a message's parts are parsed
   * when it is emitted, so only one message's parsed parts are alive at once.
   * A row `unread` says the adapter never reads is dropped as it comes, neither
   * counted nor parsed.
   */
  private read(
    sessionId: string,
    unread: (data: unknown) => boolean,
    part: (data: Rec) => Rec | null,
    info: (data: Rec, id: string) => Rec,
    emit: (message: StoredMessage) => void,
  ): { rows: number; malformed: number } {
    const tally = { rows: 0, malformed: 0 };
    // Rows as arrays (raw statements), not an object per row: [id, message_id, data] and [id, data];
    // all() rather than iterate(): a quarter less CPU per row, and the texts are kept till their message anyway.
    const byMessage = new Map<string, unknown[]>();
    for (const [id, messageId, raw] of this.q.parts.all(sessionId) as unknown[][]) {
      if (unread(raw)) continue;
      tally.rows++;
      if (typeof id !== "string" || typeof messageId !== "string") {
        tally.malformed++;
        continue;
      }
      const list = byMessage.get(messageId);
      if (list) list.push(id, raw);
      else byMessage.set(messageId, [id, raw]);
    }
    const seen = new Set<string>();
    for (const [id, raw] of this.q.messages.all(sessionId) as unknown[][]) {
      tally.rows++;
      const data = parseData(raw);
      if (!data || typeof data.role !== "string" || typeof id !== "string") {
        tally.malformed++;
        continue;
      }
      // A message id read twice (no primary key) gets its parts again, counted once.
      const counted = seen.has(id) ? { malformed: 0 } : tally;
      seen.add(id);
      emit({ info: info(data, id), parts: partsOf(byMessage.get(id), part, counted, true) });
    }
    // Parts of no message read here are never observed; a malformed one is still counted.
    for (const [messageId, list] of byMessage) if (!seen.has(messageId)) partsOf(list, part, tally, false);
    return tally;
  }

  /** Copies the database with SQLite's backup API (the copy is a plain file the caller owns). */
  async backup(to: string): Promise<void> {
    await this.db.backup(to);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}

/**
 * SQLite reads a WAL database only through its -wal and -shm files: while no
 * opencode has it open they do not exist, and a reader must be able to create
 * them beside it (a read-only folder, such as a sandboxed home, cannot).
 */
function openHint(path: string, err: unknown): string {
  const message = (err as Error).message;
  if ((err as { code?: unknown }).code !== "SQLITE_CANTOPEN" || existsSync(`${path}-wal`)) return message;
  return `${message} (with no opencode running, SQLite creates ${path}-wal and -shm to read it: its folder must be writable for this process)`;
}

function statements(db: Database.Database) {
  return {
    since: db.prepare(
      `SELECT ${SESSION_COLS} FROM session WHERE time_updated >= ? ORDER BY time_updated DESC, id LIMIT ?`,
    ),
    all: db.prepare(`SELECT ${SESSION_COLS} FROM session ORDER BY time_created, id`),
    one: db.prepare(`SELECT ${SESSION_COLS} FROM session WHERE id = ?`),
    children: db.prepare(`SELECT ${SESSION_COLS} FROM session WHERE parent_id = ? ORDER BY time_created, id`),
    messages: db.prepare("SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id").raw(),
    // No ORDER BY: SQLite sorted every row in a temporary b-tree; a message's parts are put in id order as they are parsed (part-rows.ts).
    parts: db.prepare("SELECT id, message_id, data FROM part WHERE session_id = ?").raw(),
  };
}

/** A part as parsed: the adapter reads it whole, then it is dropped with its message. */
function keepPart(data: Rec): Rec {
  return data;
}

/** messages() parses every part row (storedPart drops the unread types after parsing). */
function readEvery(): boolean {
  return false;
}

/**
 * A message's parts parsed from `list` ([id, data text] pairs), in id order,
 * each as `part` makes it; a row that is not a JSON object with a string
 * type is counted malformed and skipped. `keep` false only counts.
 */
function partsOf(
  list: unknown[] | undefined,
  part: (data: Rec) => Rec | null,
  tally: { malformed: number },
  keep: boolean,
): Rec[] {
  const out: Rec[] = [];
  if (!list) return out;
  const rows = keep ? inIdOrder(list) : list;
  for (let i = 0; i < rows.length; i += 2) {
    const data = parseData(rows[i + 1]);
    if (!data || typeof data.type !== "string") {
      tally.malformed++;
      continue;
    }
    if (!keep) continue;
    data.id = rows[i];
    const kept = part(data);
    if (kept) out.push(kept);
  }
  return out;
}

function sessionRows(raw: Rec[]): Rows<SessionRow> {
  const rows: SessionRow[] = [];
  let malformed = 0;
  for (const r of raw) {
    const row = toSessionRow(r);
    if (row) rows.push(row);
    else malformed++;
  }
  return { rows, malformed };
}

/** The three tables and the columns the queries use; any other table is never looked at. */
function checkShape(db: Database.Database, path: string): void {
  const columns = db.prepare("SELECT name FROM pragma_table_info(?)");
  const have = new Map<string, Set<string>>();
  for (const table of Object.keys(REQUIRED)) {
    const cols = new Set((columns.all(table) as Array<{ name: string }>).map((c) => c.name));
    if (cols.size === 0)
      throw new OpencodeDbError("unexpected_shape", path, `not an opencode database: no "${table}" table`);
    have.set(table, cols);
  }
  for (const [table, needed] of Object.entries(REQUIRED)) {
    const missing = needed.find((c) => !have.get(table)?.has(c));
    if (missing)
      throw new OpencodeDbError(
        "unexpected_shape",
        path,
        `unexpected opencode database shape: "${table}" has no "${missing}" column`,
      );
  }
}
