// The watchdog's view of opencode's own database (every local session: TUI,
// `opencode run`, `opencode serve`): the sessions updated since the last
// tick, each walked up to its root and read with its whole tree, through the
// read-only reader calibrate shares. One snapshot per tree, and the event
// loop gets a turn between trees, since `serve` ticks in-process. I/O only;
// judging is replay-trees.ts.
import { OpencodeDb, OpencodeDbError, type SessionRow } from "../opencode-db/reader.ts";
import type { WatchedSession, WatchedTree } from "./discover.ts";

/** What the tick made of the database: not used, not there, read, or there but unusable. */
export type DbState = "off" | "missing" | "read" | "unreadable" | "unexpected_shape";

export interface DbSeen {
  state: DbState;
  /** The file looked at; null when the source is off or opencode keeps no file. */
  path: string | null;
  /** Why it could not be read (for the log); null when it was. */
  detail: string | null;
  trees: WatchedTree[];
  /** Sessions updated since the tick's start time. */
  active: number;
  /** Rows skipped as malformed. */
  malformed: number;
  /** More was active than one tick reads; the rest waits for the next tick. */
  truncated: boolean;
}

export interface DbReadOptions {
  path: string;
  /** Epoch ms: sessions updated since then are active. */
  since: number;
  maxSessions: number;
  maxTree: number;
  maxDepth: number;
  /** Message and part rows one tick reads at most (trees are read whole, so it may overshoot by one tree). */
  maxRows: number;
  busyTimeoutMs: number;
}

export function emptyDbSeen(state: DbState, path: string | null, detail: string | null = null): DbSeen {
  return { state, path, detail, trees: [], active: 0, malformed: 0, truncated: false };
}

function watched(r: SessionRow): WatchedSession {
  return {
    id: r.id,
    parentID: r.parentId,
    directory: r.directory,
    time: { updated: r.updated ?? r.created ?? 0 },
  };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Reads the active trees; never throws (an unreadable file is a state, not an error). */
export async function readDbSource(o: DbReadOptions): Promise<DbSeen> {
  let reader: OpencodeDb;
  try {
    reader = OpencodeDb.open(o.path, { busyTimeoutMs: o.busyTimeoutMs });
  } catch (err) {
    const kind = err instanceof OpencodeDbError ? err.kind : "unreadable";
    return emptyDbSeen(kind, o.path, kind === "missing" ? null : (err as Error).message);
  }
  const seen = emptyDbSeen("read", o.path);
  try {
    await readTrees(reader, o, seen);
  } catch (err) {
    // A SQLite error mid-read (a corrupt page, a lock held past the busy timeout).
    return {
      ...emptyDbSeen("unreadable", o.path, `${o.path}: ${(err as Error).message}`),
      malformed: seen.malformed,
    };
  } finally {
    reader.close();
  }
  return seen;
}

async function readTrees(reader: OpencodeDb, o: DbReadOptions, seen: DbSeen): Promise<void> {
  const listed = reader.updatedSince(o.since, o.maxSessions + 1);
  seen.malformed += listed.malformed;
  if (listed.rows.length > o.maxSessions) seen.truncated = true;
  const active = listed.rows.slice(0, o.maxSessions);
  seen.active = active.length;
  const roots = rootsOf(reader, active, o.maxDepth, seen);
  let sessions = 0;
  let rows = 0;
  let usable = 0;
  for (const root of roots) {
    if (sessions >= o.maxSessions || rows >= o.maxRows) {
      seen.truncated = true;
      break;
    }
    await turn();
    const tree = reader.snapshot(() => readTree(reader, root, o.maxTree));
    seen.trees.push(tree.members);
    seen.malformed += tree.badSessions + tree.badRows;
    sessions += tree.members.length;
    rows += tree.rows;
    usable += tree.rows - tree.badRows;
  }
  // Rows there but none usable: opencode changed what it stores, not "all healthy".
  if (rows > 0 && usable === 0) {
    seen.state = "unexpected_shape";
    seen.detail = `${o.path}: none of ${rows} message/part row(s) has the shape the watchdog reads`;
    seen.trees = [];
  }
}

/** Each active session's root (walked up through parent_id), in order, once each. */
function rootsOf(reader: OpencodeDb, active: SessionRow[], maxDepth: number, seen: DbSeen): SessionRow[] {
  const known = new Map(active.map((r) => [r.id, r]));
  const roots = new Map<string, SessionRow>();
  for (const row of active) {
    let cur = row;
    const visited = new Set([row.id]);
    for (let d = 0; d < maxDepth && cur.parentId && !visited.has(cur.parentId); d++) {
      visited.add(cur.parentId);
      const parent = known.get(cur.parentId) ?? reader.session(cur.parentId);
      if (parent === "malformed") seen.malformed++;
      if (parent === null || parent === "malformed") break;
      known.set(parent.id, parent);
      cur = parent;
    }
    if (!roots.has(cur.id)) roots.set(cur.id, cur);
  }
  return [...roots.values()];
}

/** A root and its descendants (at most maxTree), breadth-first, each with its messages. */
function readTree(reader: OpencodeDb, root: SessionRow, maxTree: number) {
  const members: SessionRow[] = [root];
  const queue = [root.id];
  const inTree = new Set(queue);
  let badSessions = 0;
  while (queue.length > 0 && members.length < maxTree) {
    const kids = reader.children(queue.shift() as string);
    badSessions += kids.malformed;
    for (const child of kids.rows) {
      if (inTree.has(child.id) || members.length >= maxTree) continue;
      inTree.add(child.id);
      members.push(child);
      queue.push(child.id);
    }
  }
  let rows = 0;
  let badRows = 0;
  const tree: WatchedTree = members.map((s) => {
    const read = reader.messages(s.id);
    rows += read.rows;
    badRows += read.malformed;
    return { session: watched(s), messages: read.messages };
  });
  return { members: tree, rows, badRows, badSessions };
}
