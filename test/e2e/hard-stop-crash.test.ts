// Crash safety of a hard stop, with real processes and a real SQLite file: a
// child process ingests the transition that hard-stops a tree and is killed
// with SIGKILL just before each statement of the ingest in turn, and once
// after the commit. Every run leaves the database as it was before, or with
// all of the hard stop: the transition, the tree's stage, the tree refusal
// and its log line, the closed directive, the counters.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { openDatabase } from "../../router-ext/db/open.ts";
import { planKnobs, planTransition } from "../../router-ext/modes/plan.ts";
import { openSqliteStore } from "../../router-ext/store/sqlite-store.ts";
import { configSchema } from "../../shared/index.ts";
import { bundleChild } from "../helpers/child-bundle.ts";
import { transition } from "../helpers/wire-fixtures.ts";

const REPO = join(import.meta.dirname, "..", "..");
const T0 = 1_800_000_000_000;
const knobs = planKnobs(configSchema.parse({ progress: { mode: "auto_recover", max_recoveries: 1 } }));
const looping = (session: string, at: number) =>
  transition(session, "root", "build", "ok", "looping", at, { report: "[stallguard] looping" });

let dir: string;
let child: string;
let seed: string;

/** Everything a hard stop writes, as one comparable value. */
function snapshot(path: string): string {
  const db = openDatabase(path);
  try {
    const all = (sql: string) => db.prepare(sql).all();
    return JSON.stringify({
      transitions: all("SELECT id FROM transitions ORDER BY id"),
      refusals: all("SELECT scope, key, state, changed_by FROM refusals ORDER BY scope, key"),
      refusalLog: all("SELECT scope, key, state FROM refusal_log ORDER BY seq"),
      trees: all("SELECT root_id, state FROM tree_modes"),
      sessions: all("SELECT session_id, verdict, stage, flags FROM sessions ORDER BY session_id"),
      directives: all("SELECT id, done_at, error FROM mode_directives ORDER BY id"),
      counters: all("SELECT name, value FROM counters ORDER BY name"),
    });
  } finally {
    db.close();
  }
}

/** Runs the child on a fresh copy of the seeded database; returns the copy, its exit and the statement count. */
function runChild(killAt: number): { path: string; signal: NodeJS.Signals | null; ran: number } {
  const path = join(dir, `run-${killAt}.db`);
  copyFileSync(seed, path);
  const now = T0 + 60_000;
  const body = JSON.stringify([looping("w2", now)]);
  const r = spawnSync(
    process.execPath,
    [child, path, String(killAt), body, JSON.stringify(knobs), String(now)],
    {
      encoding: "utf8",
      timeout: 30_000,
    },
  );
  if (r.error) throw r.error;
  if (r.signal === null && r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
  return { path, signal: r.signal, ran: Number(r.stdout) };
}

beforeAll(async () => {
  mkdirSync(join(REPO, ".stallguard-tmp"), { recursive: true });
  // Inside the checkout (git-ignored), so the child resolves better-sqlite3 from its node_modules.
  dir = mkdtempSync(join(REPO, ".stallguard-tmp", "crash-"));
  child = await bundleChild("ingest-child.ts", join(dir, "ingest-child.mjs"));
  // The tree's first recovery (stage 1: the session refused, a directive open).
  seed = join(dir, "seed.db");
  const store = await openSqliteStore(seed);
  await store.storeProgress([looping("w1", T0)], {
    now: T0,
    plan: (ctx, t) => planTransition(ctx, t, knobs, T0),
  });
  await store.close();
});
afterAll(async () => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("a hard stop killed at any step", () => {
  test("leaves none or all of it", async () => {
    const before = snapshot(seed);
    const whole = runChild(0);
    expect(whole.signal).toBeNull();
    const after = snapshot(whole.path);
    // The hard stop as one piece: stage 3, the tree refused by the mode, the open directive closed.
    expect(JSON.parse(after)).toMatchObject({
      refusals: expect.arrayContaining([
        { scope: "tree", key: "root", state: "stopped", changed_by: "stallguard" },
      ]),
      directives: [expect.objectContaining({ error: "hard_stop" })],
      sessions: expect.arrayContaining([
        { session_id: "w2", verdict: "looping", stage: "stopped", flags: 1 },
      ]),
    });
    expect(after).not.toBe(before);
    expect(whole.ran).toBeGreaterThan(10);
    // Killed before each statement (the last one is the COMMIT): nothing; killed after the commit: all.
    for (let k = 1; k <= whole.ran + 1; k++) {
      const run = runChild(k);
      expect(run.signal, `kill at statement ${k}`).toBe("SIGKILL");
      expect(snapshot(run.path), `kill at statement ${k} of ${whole.ran}`).toBe(
        k <= whole.ran ? before : after,
      );
    }
  });
});
