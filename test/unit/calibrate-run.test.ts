// runCalibrate end to end in-process: sources, config layers, labels, errors
// and progress, with real files.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { syntheticSessions, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { type CalibrateOptions, parseSince } from "../../router-ext/calibrate/run.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
let tmp: string;
let dbPath: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "stallguard-cal-run-"));
  dbPath = join(tmp, "opencode.db");
  // Session 0 re-reads one file (loopEvery), the others work normally.
  writeOpencodeDb(dbPath, syntheticSessions(3, 40, { loopEvery: 3 }));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const run = (opts: CalibrateOptions, env: NodeJS.ProcessEnv = {}, tty = false) =>
  calibrateCaptured(opts, { env, tty, now: 1_000_000_000_000 });

describe("runCalibrate", () => {
  test("without a source it reads opencode's default database (OPENCODE_DB here)", async () => {
    const r = await run({}, { OPENCODE_DB: dbPath });
    expect(r.code, r.err).toBe(0);
    expect(r.results.map((x) => [x.id, x.calls, x.worst])).toEqual([
      ["ses_00000000bench", 40, expect.not.stringMatching(/^ok$/)],
      ["ses_00000001bench", 40, "ok"],
      ["ses_00000002bench", 40, "ok"],
    ]);
    expect(r.out).toMatch(/^session\s+agent/);
    expect(r.err).toContain(`3 session(s) from ${dbPath}`);
    expect(r.err).toMatch(/replayed 120 tool call\(s\)/);
  });

  test("--json prints only the document on stdout", async () => {
    const r = await run({ db: dbPath, json: true, sessions: ["ses_00000001bench"] });
    const doc = JSON.parse(r.out) as { sessions: Array<{ id: string; timeline?: unknown }> };
    expect(doc.sessions.map((s) => s.id)).toEqual(["ses_00000001bench"]);
    expect(doc.sessions[0]?.timeline).toBeUndefined();
    const t = await run({ db: dbPath, json: true, timeline: true, copy: true });
    expect(
      (JSON.parse(t.out) as { sessions: Array<{ timeline: unknown[] }> }).sessions[0]?.timeline,
    ).toHaveLength(40);
  });

  test("--html writes the report; --sweep with --labels prints the threshold table", async () => {
    const file = join(tmp, "report.html");
    const labels = join(tmp, "labels.json");
    writeFileSync(labels, JSON.stringify({ ses_00000000bench: "loop", ses_00000001bench: "healthy" }));
    const r = await run({ db: dbPath, html: file, sweep: true, labels, grid: "stall_turns=2,4" });
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/sweep: 2 candidate\(s\)/);
    expect(r.out).toMatch(/proposed: /);
    const page = readFileSync(file, "utf8");
    expect(page.match(/<svg /g)).toHaveLength(3);
    expect(page).toContain("Threshold sweep");
  });

  test("labels from an export directory's labels.json feed the sweep", async () => {
    const r = await run({ exports: [RECORDED], sweep: true, grid: "top_warn=4,6" });
    expect(r.code, r.err).toBe(0);
    const labels = Object.values(JSON.parse(readFileSync(join(RECORDED, "labels.json"), "utf8"))) as Array<{
      label: string;
    }>;
    expect(r.sweep?.current.loops).toBe(labels.filter((l) => l.label === "loop").length);
    expect(r.sweep?.current.healthy).toBe(labels.filter((l) => l.label === "healthy").length);
    expect(r.sweep?.current.loops).toBeGreaterThan(0);
  });

  test("--sweep without labels is refused with a reason", async () => {
    const r = await run({ db: dbPath, sweep: true });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--sweep needs at least one session labelled "loop" and one labelled "healthy"/);
  });

  test("--config layers over the defaults; a bad key fails with its file and path", async () => {
    const good = join(tmp, "good.yaml");
    writeFileSync(
      good,
      "thresholds:\n  top_warn: 100\n  dup_warn: 1\n  fail_warn: 100\n  cum_warn: 100\n  top_ro_warn: 100\n",
    );
    const relaxed = await run({ db: dbPath, config: good });
    expect(relaxed.code, relaxed.err).toBe(0);
    expect(relaxed.err).toContain(`config/config.yaml + ${good}`);
    const bad = join(tmp, "bad.yaml");
    writeFileSync(bad, "thresholds:\n  dup_warm: 0.3\n");
    const r = await run({ db: dbPath, config: bad });
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${bad}: thresholds.dup_warm: unknown key`);
  });

  test("bad inputs are errors with a message, never a crash", async () => {
    expect((await run({ db: join(tmp, "none.db") })).err).toMatch(/cannot open .*none\.db read-only/);
    const labels = join(tmp, "bad-labels.json");
    writeFileSync(labels, JSON.stringify({ ses_x: "maybe" }));
    const r = await run({ db: dbPath, labels, sweep: true });
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/bad labels at ses_x/);
    expect((await run({ db: dbPath, since: "yesterday-ish" })).code).toBe(2);
    expect((await run({ db: dbPath, labels: join(tmp, "nope.json") })).err).toMatch(/--labels: cannot read/);
  });

  test("a progress bar is drawn on a terminal and cleared; --quiet prints nothing", async () => {
    const r = await run({ db: dbPath }, {}, true);
    expect(r.err).toContain("reading and judging sessions [");
    expect(r.err).toContain("\r\x1b[2K");
    const q = await run({ db: dbPath, quiet: true });
    expect(q.err).toBe("");
  });
});

describe("parseSince", () => {
  const now = 1_000_000_000_000;
  test("epoch ms, ISO dates and durations back from now", () => {
    expect(parseSince("1700000000000", now)).toBe(1_700_000_000_000);
    expect(parseSince("2024-01-02T00:00:00Z", now)).toBe(Date.UTC(2024, 0, 2));
    expect(parseSince("7d", now)).toBe(now - 7 * 86_400_000);
    expect(parseSince("90m", now)).toBe(now - 90 * 60_000);
    expect(() => parseSince("soon", now)).toThrow(/--since: not a date/);
  });
});

describe("label sets", () => {
  test("--labels naming the labels.json already beside the exports is one set, not two", async () => {
    const r = await run({ exports: [RECORDED], labels: join(RECORDED, "labels.json") });
    expect(r.code, r.err).toBe(0);
    expect(r.out.match(/labelled set/g) ?? []).toHaveLength(1);
  });
});
