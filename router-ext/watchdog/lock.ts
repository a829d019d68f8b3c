// A lock file so two ticks never overlap: a tick that finds the lock held
// is skipped, not stacked. The file holds the owner's pid and start time; a
// lock whose pid is gone (a crashed tick), or that is older than staleMs, is
// taken over.
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, writeSync } from "node:fs";
import { dirname } from "node:path";

export interface Lock {
  path: string;
  release(): void;
}

interface LockBody {
  pid: number;
  at: number;
  token: string;
}

function readBody(path: string): LockBody | null {
  try {
    const v = JSON.parse(readFileSync(path, "utf8")) as Partial<LockBody>;
    if (typeof v.pid === "number" && typeof v.at === "number" && typeof v.token === "string")
      return { pid: v.pid, at: v.at, token: v.token };
  } catch {
    // unreadable or half-written: treated as stale below
  }
  return null;
}

export function pidAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function tryCreate(path: string, body: LockBody): boolean {
  let fd: number;
  try {
    fd = openSync(path, "wx", 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw err;
  }
  try {
    writeSync(fd, JSON.stringify(body));
  } finally {
    closeSync(fd);
  }
  return true;
}

/**
 * Takes the lock, or returns null when a live tick holds it. `now` and
 * `staleMs` decide when a live-looking holder is old enough to be taken over.
 */
export function acquireLock(
  path: string,
  opts: { staleMs: number; now?: number; log?: (line: string) => void },
): Lock | null {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const now = opts.now ?? Date.now();
  const body: LockBody = { pid: process.pid, at: now, token: `${process.pid}-${now}-${Math.random()}` };
  const held = (): Lock => ({
    path,
    release() {
      // Only remove the file when it is still ours (a takeover may have replaced it).
      if (readBody(path)?.token === body.token) rmSync(path, { force: true });
    },
  });
  if (tryCreate(path, body)) return held();
  const cur = readBody(path);
  const stale = !cur || !pidAlive(cur.pid) || now - cur.at > opts.staleMs;
  if (!stale) return null;
  opts.log?.(
    `watchdog: taking over a stale lock${cur ? ` (pid ${cur.pid}, ${Math.round((now - cur.at) / 1000)} s old)` : ""}`,
  );
  // Move the stale file aside atomically; if another tick moved it first, our rename fails
  // and the create below decides who wins.
  const aside = `${path}.stale-${process.pid}`;
  try {
    renameSync(path, aside);
  } catch {
    return null; // someone else took it over first
  }
  const moved = readBody(aside);
  if (cur && moved?.token !== cur.token) {
    // Another tick replaced the stale lock between our read and the rename: give it back.
    try {
      renameSync(aside, path);
    } catch {
      rmSync(aside, { force: true });
    }
    return null;
  }
  rmSync(aside, { force: true });
  return tryCreate(path, body) ? held() : null;
}
