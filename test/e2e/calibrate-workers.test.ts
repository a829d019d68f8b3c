// The built CLI (dist/stallguard.mjs, built by the e2e global setup) runs
// calibrate --db across worker threads on its bundled worker
// (dist/calibrate-replay-worker.mjs): the same bytes on stdout as --jobs 1,
// and a worker that fails ends the run with the database named and exit 1.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BUILT_CLI, type CliResult, node } from "../helpers/built-cli.ts";
import { corruptToolPages, writeTreeDb } from "../helpers/tree-db.ts";

function calibrate(args: string[]): Promise<CliResult> {
  return node([BUILT_CLI, "calibrate", ...args], {
    env: { PATH: process.env.PATH ?? "" },
    timeoutMs: 180_000,
  });
}

describe("the built CLI: calibrate --db --jobs N", () => {
  let tmp: string;
  let dbPath: string;
  let last: string;
  beforeAll(() => {
    tmp = mkdtempSync(join(tmpdir(), "sg-cal-workers-e2e-"));
    dbPath = join(tmp, "opencode.db");
    last = writeTreeDb(dbPath, 2);
  });
  afterAll(() => {
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("--jobs 2 prints exactly what --jobs 1 prints (--json --timeline, and the table)", async () => {
    const serial = await calibrate(["--db", dbPath, "--json", "--timeline", "--jobs", "1"]);
    expect(serial.code, serial.stderr).toBe(0);
    expect(serial.stderr).not.toMatch(/worker thread/);
    const doc = JSON.parse(serial.stdout) as { sessions: Array<{ parent_id: string | null; worst: string }> };
    expect(doc.sessions.some((s) => s.parent_id !== null)).toBe(true);
    expect(doc.sessions.some((s) => s.worst !== "ok")).toBe(true);
    const par = await calibrate(["--db", dbPath, "--json", "--timeline", "--jobs", "2"]);
    expect(par.code, par.stderr).toBe(0);
    expect(par.stderr).toContain("across 2 threads (--jobs 2: this one and 1 worker thread(s))");
    expect(par.stdout).toBe(serial.stdout);
    const [table, tablePar] = await Promise.all([
      calibrate(["--db", dbPath, "--jobs", "1"]),
      calibrate(["--db", dbPath, "--jobs", "2"]),
    ]);
    expect(tablePar.code, tablePar.stderr).toBe(0);
    expect(tablePar.stdout).toBe(table.stdout);
  });

  test("a worker that fails: exit 1, the database named, nothing on stdout", async () => {
    const broken = join(tmp, "broken.db");
    copyFileSync(dbPath, broken);
    expect(corruptToolPages(broken, last)).toBeGreaterThan(0);
    const r = await calibrate(["--db", broken, "--json", "--jobs", "2"]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toMatch(
      new RegExp(
        `stallguard calibrate: --db \\(opencode's database.*\\): replay thread \\d of 2 failed reading ${broken}: .*malformed`,
      ),
    );
  });
});
