import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { acquireLock, pidAlive } from "./lock.ts";

const tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-lock-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A pid that certainly exited: a child that ran and was reaped. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(r.stdout);
}

describe("watchdog lock file", () => {
  test("a held lock makes the second taker skip; release frees it", () => {
    const path = join(tmp, "a", "tick.lock");
    const first = acquireLock(path, { staleMs: 60_000 });
    expect(first).not.toBeNull();
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(process.pid);
    expect(acquireLock(path, { staleMs: 60_000 })).toBeNull();
    first?.release();
    expect(existsSync(path)).toBe(false);
    const again = acquireLock(path, { staleMs: 60_000 });
    expect(again).not.toBeNull();
    again?.release();
  });

  test("a lock left by a crashed tick (its pid is gone) is taken over, and said so", () => {
    const path = join(tmp, "crashed.lock");
    const pid = deadPid();
    expect(pidAlive(pid)).toBe(false);
    writeFileSync(path, JSON.stringify({ pid, at: Date.now(), token: "old" }));
    const logs: string[] = [];
    const lock = acquireLock(path, { staleMs: 60_000, log: (l) => logs.push(l) });
    expect(lock).not.toBeNull();
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(process.pid);
    expect(logs.join("\n")).toContain("stale lock");
    lock?.release();
  });

  test("a live holder older than staleMs is taken over; a younger one is not", () => {
    const path = join(tmp, "old.lock");
    const now = 1_000_000;
    writeFileSync(path, JSON.stringify({ pid: process.pid, at: now - 5_000, token: "t" }));
    expect(acquireLock(path, { staleMs: 10_000, now })).toBeNull();
    const lock = acquireLock(path, { staleMs: 1_000, now });
    expect(lock).not.toBeNull();
    lock?.release();
  });

  test("garbage in the lock file counts as stale", () => {
    const path = join(tmp, "garbage.lock");
    writeFileSync(path, "{half");
    const lock = acquireLock(path, { staleMs: 60_000 });
    expect(lock).not.toBeNull();
    lock?.release();
  });

  test("release after a takeover by someone else leaves their lock alone", () => {
    const path = join(tmp, "taken.lock");
    const mine = acquireLock(path, { staleMs: 60_000 });
    writeFileSync(path, JSON.stringify({ pid: process.pid, at: Date.now(), token: "theirs" }));
    mine?.release();
    expect(JSON.parse(readFileSync(path, "utf8")).token).toBe("theirs");
  });
});
