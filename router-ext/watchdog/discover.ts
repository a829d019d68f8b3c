// What a tick can see: the sessions active since the last tick and their
// whole trees (walked up to each root, then down through its children) with
// their messages, from opencode's own database (every local session) and from
// the opencode servers that answer (remote or other users' instances). A
// session the database already gave is not read again from a server. I/O
// only; judging is replay-trees.ts.
import type { StoredMessage } from "../../shared/index.ts";
import { type DbSeen, emptyDbSeen, readDbSource } from "./db-source.ts";
import { type ApiSession, OpencodeApi, ShapeError } from "./opencode-api.ts";
import { collectServers, probeServer } from "./servers.ts";

const LIST_LIMIT = 500;
const MAX_SESSIONS = 500;
export const MAX_TREE = 200;
const MAX_DEPTH = 16;
/** Message and part rows one tick reads from the database at most. */
const MAX_DB_ROWS = 200_000;

/** What judging needs of a session, whichever source gave it. */
export type WatchedSession = Pick<ApiSession, "id" | "parentID" | "directory" | "time">;

export type WatchedTree = Array<{ session: WatchedSession; messages: StoredMessage[] }>;

/** One tick's view of opencode. */
export interface Seen {
  /** opencode's database: what was made of it, and the trees read from it (also in `trees`). */
  db: DbSeen;
  /** Servers named by the registry, the config and the flags. */
  known: number;
  /** Servers that answered the probe. */
  servers: number;
  /** Answering servers that listed their sessions. */
  listed: number;
  /** Every tree read, the database's first. */
  trees: WatchedTree[];
  /** Trees read from servers. */
  serverTrees: number;
  /** opencode answered in a shape the watchdog does not understand. */
  shapeErrors: string[];
  /** Session lists that failed (HTTP errors, timeouts). */
  apiErrors: string[];
  /** Trees that could not be read whole. */
  treeFailures: number;
  /** More sessions were active than one tick reads. */
  truncated: boolean;
}

export interface DiscoverOptions {
  /** opencode's database file; null when the source is off or opencode keeps none. */
  dbPath: string | null;
  /** The database source is switched off (watchdog.opencode_db.enabled false). */
  dbOff?: boolean;
  registry: readonly string[];
  configServers: readonly string[];
  flagServers: readonly string[];
  /** Epoch ms: sessions updated since then are active. */
  since: number;
  timeoutMs: number;
  fetchImpl: typeof fetch;
  /** The Authorization header a server's URL gets, if any (servers.ts authFor). */
  auth: (url: string) => string | null;
  log: (line: string) => void;
}

/** The database source: off, no file to read, or what reading it gave. */
function readDb(o: DiscoverOptions): Promise<DbSeen> | DbSeen {
  if (o.dbOff) return emptyDbSeen("off", null);
  if (o.dbPath === null) return emptyDbSeen("missing", null);
  return readDbSource({
    path: o.dbPath,
    since: o.since,
    maxSessions: MAX_SESSIONS,
    maxTree: MAX_TREE,
    maxDepth: MAX_DEPTH,
    maxRows: MAX_DB_ROWS,
    busyTimeoutMs: o.timeoutMs,
  });
}

export async function discover(o: DiscoverOptions): Promise<Seen> {
  const db = await readDb(o);
  const urls = collectServers({ registry: o.registry, config: o.configServers, flags: o.flagServers });
  const http = (u: string) => ({ timeoutMs: o.timeoutMs, fetchImpl: o.fetchImpl, auth: o.auth(u) });
  const probes = await Promise.all(urls.map((u) => probeServer(u, http(u))));
  const apis = urls.filter((_, i) => probes[i]).map((u) => new OpencodeApi(u, http(u)));
  const seen: Seen = {
    db,
    known: urls.length,
    servers: apis.length,
    listed: 0,
    trees: [...db.trees],
    serverTrees: 0,
    shapeErrors: [],
    apiErrors: [],
    treeFailures: 0,
    truncated: db.truncated,
  };
  if (apis.length > 0) await fromServers(apis, o, seen);
  return seen;
}

/** The servers' active trees, into `seen`; sessions the database gave are skipped. */
async function fromServers(apis: OpencodeApi[], o: DiscoverOptions, seen: Seen): Promise<void> {
  // A server on the same database lists the same sessions: those are read once, from the file.
  const fromDb = new Set(seen.db.trees.flatMap((t) => t.map((m) => m.session.id)));
  const failed = (api: OpencodeApi, err: unknown, list?: string[]) => {
    if (err instanceof ShapeError) seen.shapeErrors.push(`${api.baseUrl}: ${err.message}`);
    else {
      list?.push(`${api.baseUrl}: ${(err as Error).message}`);
      o.log(`watchdog: ${api.baseUrl}: ${(err as Error).message}`);
    }
  };

  // 1. Sessions active since the last tick, from every answering server (shared DBs repeat them).
  const known = new Map<string, { session: ApiSession; api: OpencodeApi }>();
  for (const api of apis) {
    try {
      const list = await api.listSessions(o.since, LIST_LIMIT);
      seen.listed++;
      for (const s of list) if (!known.has(s.id) && !fromDb.has(s.id)) known.set(s.id, { session: s, api });
    } catch (err) {
      failed(api, err, seen.apiErrors);
    }
  }

  // 2. Whole trees: walk up to each active session's root, then down through its children.
  const roots = new Map<string, OpencodeApi>();
  for (const [id, k] of [...known]) {
    let cur = k.session;
    const visited = new Set([id]);
    try {
      for (let d = 0; d < MAX_DEPTH && cur.parentID && !visited.has(cur.parentID); d++) {
        visited.add(cur.parentID);
        const parent = known.get(cur.parentID)?.session ?? (await k.api.getSession(cur.parentID));
        if (!parent) break;
        if (!known.has(parent.id)) known.set(parent.id, { session: parent, api: k.api });
        cur = parent;
      }
    } catch (err) {
      failed(k.api, err);
    }
    if (!roots.has(cur.id)) roots.set(cur.id, k.api);
  }
  let total = 0;
  for (const [rootId, api] of roots) {
    if (total >= MAX_SESSIONS) {
      o.log(`watchdog: more than ${MAX_SESSIONS} sessions active; the rest wait for the next tick`);
      seen.truncated = true;
      break;
    }
    const rootSession = known.get(rootId)?.session;
    if (!rootSession || fromDb.has(rootId)) continue;
    try {
      const tree = await readTree(api, rootSession);
      seen.trees.push(tree);
      seen.serverTrees++;
      total += tree.length;
    } catch (err) {
      seen.treeFailures++;
      failed(api, err);
    }
  }
}

/** A root and its descendants (at most MAX_TREE), breadth-first, each with its messages. */
async function readTree(api: OpencodeApi, root: ApiSession): Promise<WatchedTree> {
  const members: ApiSession[] = [root];
  const queue = [root.id];
  const inTree = new Set(queue);
  while (queue.length > 0 && members.length < MAX_TREE) {
    const id = queue.shift() as string;
    for (const child of await api.children(id)) {
      if (inTree.has(child.id) || members.length >= MAX_TREE) continue;
      inTree.add(child.id);
      members.push(child);
      queue.push(child.id);
    }
  }
  const tree: WatchedTree = [];
  for (const s of members) tree.push({ session: s, messages: await api.messages(s.id) });
  return tree;
}
