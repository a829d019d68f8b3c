// Where calibration sessions come from: opencode export JSON files, an
// opencode.db (read-only snapshot), or a live `opencode serve`. All three
// yield the one stored shape ({info, parts} records) the core adapter reads.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { num, obj, type ReplaySession, type StoredMessage, type StoredOptions } from "../../shared/index.ts";
import { opencodeDataDir, opencodeDbPath } from "../opencode-db/path.ts";
import { OpencodeDb } from "../opencode-db/reader.ts";
import { malformedWarnings, readSessions } from "./db-read.ts";
import { exportFiles } from "./export-paths.ts";
import { type LabelSet, type Labels, mergeSets, parseLabelSet } from "./labels.ts";

/** A session to replay plus what the filters and the report need. */
export interface SourceSession extends ReplaySession {
  title: string | null;
  /** Epoch ms of the last update, when the source knows it. */
  updated: number | null;
}

export interface Loaded {
  sessions: SourceSession[];
  /** Labels found next to the data (labels.json in an export directory). */
  labels: Labels;
  /** Each labels document read (export directories' labels.json), in order. */
  sets: LabelSet[];
  /** Problems that did not stop the load (an unreadable file, a bad record). */
  warnings: string[];
  /** What was skipped on purpose (a README beside the exports, a duplicate session), with the reason. */
  ignored: string[];
}

export interface Filters {
  /** Keep sessions updated at or after this epoch ms (their sub-agent sessions come along). */
  since?: number | null;
  /** Keep these sessions and their sub-agent sessions. */
  sessionIds?: readonly string[];
}

/** The database opencode itself uses (router-ext/opencode-db/path.ts); its usual place when it keeps none. */
export function defaultOpencodeDb(env: NodeJS.ProcessEnv = process.env): string {
  return opencodeDbPath(env) ?? join(opencodeDataDir(env), "opencode.db");
}

/**
 * Applies the filters: the sessions selected by id or by time, plus every
 * descendant of a selected session (a parent's verdict depends on its
 * children's landed changes). Order is kept.
 */
export function applyFilters<T extends { id: string; parentId: string | null; updated: number | null }>(
  sessions: readonly T[],
  filters: Filters,
): T[] {
  const ids = filters.sessionIds?.length ? new Set(filters.sessionIds) : null;
  const since = filters.since ?? null;
  if (!ids && since === null) return [...sessions];
  const selected = new Set<string>();
  for (const s of sessions) {
    const byId = ids ? ids.has(s.id) : true;
    const byTime = since === null || (s.updated !== null && s.updated >= since);
    if (byId && byTime) selected.add(s.id);
  }
  const children = new Map<string, string[]>();
  for (const s of sessions) {
    if (!s.parentId) continue;
    const list = children.get(s.parentId) ?? [];
    list.push(s.id);
    children.set(s.parentId, list);
  }
  const stack = [...selected];
  while (stack.length) {
    const id = stack.pop() as string;
    for (const c of children.get(id) ?? []) {
      if (!selected.has(c)) {
        selected.add(c);
        stack.push(c);
      }
    }
  }
  return sessions.filter((s) => selected.has(s.id));
}

// ---------------------------------------------------------------------------
// opencode export JSON: {info: Session, messages: [{info, parts}]}

const exportSchema = z.object({
  info: z.looseObject({
    id: z.string().min(1),
    parentID: z.string().nullish(),
    directory: z.string().nullish(),
    title: z.string().nullish(),
    time: z.looseObject({ created: z.number().optional(), updated: z.number().optional() }).optional(),
  }),
  messages: z.array(z.looseObject({ info: z.unknown(), parts: z.unknown() })),
});

/** One export document (or an array of them) -> sessions; throws with a short reason when it is not one. */
export function sessionsFromExport(doc: unknown): SourceSession[] {
  const docs = Array.isArray(doc) ? doc : [doc];
  return docs.map((d, i) => {
    const r = exportSchema.safeParse(d);
    if (!r.success) {
      const issue = r.error.issues[0];
      const where = [...(Array.isArray(doc) ? [i] : []), ...(issue?.path ?? [])].join(".") || "(root)";
      throw new Error(`not an opencode export: ${where}: ${issue?.message ?? "invalid"}`);
    }
    const { info, messages } = r.data;
    const lastMessageTime = messages.reduce((t, m) => {
      const time = obj(obj(m.info).time);
      return Math.max(t, num(time.completed) ?? num(time.created) ?? 0);
    }, 0);
    return {
      id: info.id,
      parentId: info.parentID ?? null,
      directory: info.directory ?? null,
      title: info.title ?? null,
      updated: info.time?.updated ?? (lastMessageTime || null),
      messages: messages as StoredMessage[],
    };
  });
}

/**
 * Reads export files, directories and quoted globs (router-ext/calibrate/export-paths.ts):
 * the sessions, each labels.json as its own labelled set, and every file
 * skipped with the reason. A path that does not exist throws a UsageError.
 */
export function loadExports(paths: readonly string[]): Loaded {
  const { files, labelFiles, ignored } = exportFiles(paths);
  const sessions: SourceSession[] = [];
  const warnings: string[] = [];
  const sets: LabelSet[] = [];
  for (const f of labelFiles) {
    try {
      sets.push(parseLabelSet(f.path, JSON.parse(readFileSync(f.path, "utf8"))));
    } catch (err) {
      warnings.push(`${f.path}: labels skipped: ${(err as Error).message}`);
    }
  }
  const from = new Map<string, string>();
  const dups: string[] = [];
  for (const f of files) {
    let doc: unknown;
    try {
      doc = JSON.parse(readFileSync(f, "utf8"));
    } catch (err) {
      warnings.push(`${f}: skipped: ${(err as Error).message}`);
      continue;
    }
    let found: SourceSession[];
    try {
      found = sessionsFromExport(doc);
    } catch (err) {
      warnings.push(`${f}: skipped: ${(err as Error).message}`);
      continue;
    }
    for (const s of found) {
      const first = from.get(s.id);
      if (first !== undefined) {
        dups.push(`${s.id} in ${f} (already read from ${first})`);
        continue;
      }
      from.set(s.id, f);
      sessions.push(s);
    }
  }
  if (dups.length)
    ignored.push(
      `${dups.length} duplicate session(s): ${dups.slice(0, 5).join("; ")}${dups.length > 5 ? "; ..." : ""}`,
    );
  return { sessions, labels: mergeSets(sets), sets, warnings, ignored };
}

// ---------------------------------------------------------------------------
// opencode.db: through the read-only reader the watchdog shares
// (router-ext/opencode-db/reader.ts), in one read transaction.

export interface DbOptions extends Filters {
  /** Copy the database with SQLite's backup API into a temp file first, and read the copy. */
  copy?: boolean;
  /** Called after each session is read. */
  onProgress?: (done: number, total: number) => void;
  /**
   * Turn each session into the core's observations as it is read, with these
   * options (the replay policy's): no stored records are kept, and a replay
   * with other options refuses them. Without it, sessions carry their messages.
   */
  observe?: StoredOptions;
}

/** Reads sessions from an open database in one transaction, so one snapshot. */
export function readOpencodeDb(
  reader: OpencodeDb,
  filters: Filters = {},
  onProgress?: DbOptions["onProgress"],
  observe?: StoredOptions,
): { sessions: SourceSession[]; warnings: string[] } {
  return reader.snapshot(() => {
    const all = reader.allSessions();
    const chosen = applyFilters(all.rows, filters);
    const read = readSessions(reader, chosen, onProgress, observe);
    const bad = all.malformed + read.malformed;
    return { sessions: read.sessions, warnings: malformedWarnings(bad) };
  });
}

/**
 * Runs `fn` on the database at `path`, or with `copy` on a copy SQLite's
 * backup API makes in a temp folder (one snapshot of a file opencode may be
 * writing), deleted afterwards.
 */
export async function onDbOrCopy<T>(
  path: string,
  copy: boolean,
  fn: (path: string) => T | Promise<T>,
): Promise<T> {
  if (!copy) return await fn(path);
  const tmp = mkdtempSync(join(tmpdir(), "stallguard-calibrate-"));
  try {
    const copyPath = join(tmp, "opencode-copy.db");
    const source = OpencodeDb.open(path);
    try {
      await source.backup(copyPath);
    } finally {
      source.close();
    }
    return await fn(copyPath);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Opens an opencode.db strictly read-only (never created, never written; in
 * WAL mode a reader does not block opencode and is not blocked by it) and
 * reads it in one transaction. With `copy`, SQLite's backup API copies it to a
 * temp file first and the copy is read, then deleted.
 */
export async function loadOpencodeDb(path: string, opts: DbOptions = {}): Promise<Loaded> {
  return onDbOrCopy(path, opts.copy ?? false, (p) => {
    const reader = OpencodeDb.open(p);
    try {
      const { sessions, warnings } = readOpencodeDb(reader, opts, opts.onProgress, opts.observe);
      return { sessions, labels: {}, sets: [], warnings, ignored: [] };
    } finally {
      reader.close();
    }
  });
}

// ---------------------------------------------------------------------------
// A live opencode server: GET /session, then GET /session/{id}/message.

export interface ServerOptions extends Filters {
  fetch?: typeof fetch;
  timeoutMs?: number;
  /** Basic auth for a server started with OPENCODE_SERVER_PASSWORD. */
  auth?: { username: string; password: string } | null;
  onProgress?: (done: number, total: number) => void;
}

const sessionListSchema = z.array(
  z.looseObject({
    id: z.string().min(1),
    parentID: z.string().nullish(),
    directory: z.string().nullish(),
    title: z.string().nullish(),
    time: z.looseObject({ updated: z.number().optional() }).optional(),
  }),
);
const messageListSchema = z.array(z.looseObject({ info: z.unknown(), parts: z.unknown() }));

export async function loadServer(baseUrl: string, opts: ServerOptions = {}): Promise<Loaded> {
  const doFetch = opts.fetch ?? fetch;
  const base = baseUrl.replace(/\/+$/, "");
  const headers: Record<string, string> = { accept: "application/json" };
  if (opts.auth) {
    headers.authorization = `Basic ${Buffer.from(`${opts.auth.username}:${opts.auth.password}`).toString("base64")}`;
  }
  const get = async (path: string): Promise<unknown> => {
    let res: Response;
    try {
      res = await doFetch(`${base}${path}`, {
        headers,
        signal: AbortSignal.timeout(opts.timeoutMs ?? 30_000),
      });
    } catch (err) {
      throw new Error(`GET ${base}${path}: ${(err as Error).message}`);
    }
    if (!res.ok) throw new Error(`GET ${base}${path}: HTTP ${res.status}`);
    try {
      return await res.json();
    } catch {
      throw new Error(`GET ${base}${path}: the answer is not JSON`);
    }
  };
  // The list defaults to 100 sessions: ask for everything in range.
  const query = new URLSearchParams({ limit: "1000000" });
  if (opts.since) query.set("start", String(Math.floor(opts.since)));
  const list = sessionListSchema.safeParse(await get(`/session?${query}`));
  if (!list.success) throw new Error("GET /session: unexpected shape (is this an opencode server?)");
  const all = list.data.map((s) => ({
    id: s.id,
    parentId: s.parentID ?? null,
    directory: s.directory ?? null,
    title: s.title ?? null,
    updated: s.time?.updated ?? null,
  }));
  // Oldest first, like the database.
  all.sort((a, b) => (a.updated ?? 0) - (b.updated ?? 0));
  const chosen = applyFilters(all, opts);
  const sessions: SourceSession[] = [];
  for (const [i, s] of chosen.entries()) {
    const msgs = messageListSchema.safeParse(await get(`/session/${encodeURIComponent(s.id)}/message`));
    if (!msgs.success) throw new Error(`GET /session/${s.id}/message: unexpected shape`);
    sessions.push({ ...s, messages: msgs.data as StoredMessage[] });
    opts.onProgress?.(i + 1, chosen.length);
  }
  return { sessions, labels: {}, sets: [], warnings: [], ignored: [] };
}
