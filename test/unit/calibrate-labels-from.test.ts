// `stallguard calibrate --labels-from`: the admin's marks in a real router
// (real server on loopback, real SQLite) label the user's own opencode history
// (an opencode.db holding the recorded corpus, test/fixtures/recorded) and the
// sweep proposes thresholds. The story: thresholds set too twitchy flagged two
// healthy sessions; the admin marked them false alarms and confirmed two
// loops; calibrate proposes thresholds that flag neither and catch both.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type ExportDoc, writeOpencodeDb } from "../../bench/core-opencode-db.ts";
import { run } from "../../router-ext/cli/run.ts";
import type { RunningServer } from "../../router-ext/server/start.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";
import { testIo } from "../helpers/cli-io.ts";
import { RECORDED, recordedId } from "../helpers/recorded-ids.ts";
import { QUIET_LOCAL_YAML, startTestRouter } from "../helpers/test-router.ts";
import { transition } from "../helpers/wire-fixtures.ts";

const ADMIN = "labels-from-admin-token-0123";
const PLUGIN = "labels-from-plugin-token-0123";
// Flagged under the twitchy thresholds below; the first two are healthy, the last two loops.
const FALSE_ALARMS = [recordedId("poll-progress"), recordedId("steered")];
const LOOPS = [recordedId("read-loop"), recordedId("bash-retry-loop")];

let tmp: string;
let srv: RunningServer;
let opencodeDb: string;
let twitchy: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "sg-labels-from-"));
  // The user's own opencode history: the recorded sessions in an opencode.db.
  opencodeDb = join(tmp, "opencode.db");
  const docs = readdirSync(RECORDED)
    .filter((f) => f.endsWith(".json") && f !== "labels.json")
    .map((f) => JSON.parse(readFileSync(join(RECORDED, f), "utf8")) as ExportDoc);
  writeOpencodeDb(opencodeDb, docs);
  twitchy = join(tmp, "twitchy.yaml");
  writeFileSync(twitchy, "thresholds:\n  top_warn: 3\n  stall_turns: 2\n  dup_warn: 0.2\n  fail_warn: 2\n");
  srv = await startTestRouter(tmp, QUIET_LOCAL_YAML, {
    env: { STALLGUARD_ADMIN_TOKEN: ADMIN, STALLGUARD_TOKEN: PLUGIN, XDG_CONFIG_HOME: tmp },
  });
  const api = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${srv.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${path === "/progress" ? PLUGIN : ADMIN}`,
        "content-type": "application/json",
      },
      body: JSON.stringify(body),
    });
    expect(res.status, `${method} ${path}`).toBe(200);
  };
  // The plugin reported them flagged; the admin marked each one.
  const t0 = Date.now() - 60_000;
  await api(
    "POST",
    "/progress",
    [...FALSE_ALARMS, ...LOOPS].map((id, i) => transition(id, null, "build", "ok", "stalling", t0 + i)),
  );
  for (const id of FALSE_ALARMS) await api("POST", `/api/sessions/${id}/mark`, { kind: "false_alarm" });
  for (const id of LOOPS) await api("POST", `/api/sessions/${id}/mark`, { kind: "confirmed_loop" });
});

afterAll(async () => {
  await srv?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

// Each test runs the default sweep (486 candidates) over the recorded history: seconds, more under load.
describe("calibrate --labels-from", { timeout: 30_000 }, () => {
  test("the router's marks label the user's opencode history and the sweep proposes thresholds", async () => {
    const r = await calibrateCaptured(
      { db: opencodeDb, labelsFrom: srv.url, config: twitchy },
      { env: { STALLGUARD_ADMIN_TOKEN: ADMIN } },
    );
    expect(r.code, r.err).toBe(0);
    expect(r.labels).toEqual({
      ...Object.fromEntries(FALSE_ALARMS.map((id) => [id, "healthy"])),
      ...Object.fromEntries(LOOPS.map((id) => [id, "loop"])),
    });
    // The thresholds in use flag both false alarms; the proposal flags neither and catches both loops.
    expect(r.sweep?.current).toMatchObject({ loops: 2, loopsCaught: 2, healthy: 2, healthyFlagged: 2 });
    expect(r.sweep?.proposed).toMatchObject({ loops: 2, loopsCaught: 2, healthy: 2, healthyFlagged: 0 });
    expect(r.sweep?.proposal.status).toBe("change");
    expect(r.out).toMatch(/^proposed: \S+=/m);
    // Each moved knob with its margins on the marks, and a warning: four marks are few.
    expect(r.out).toMatch(/^ {2}\w+ [\d.]+ -> [\d.]+ \(looser\): nearest false flag on the labels /m);
    expect(r.out).toMatch(/^warning: only 2 healthy and 2 loop label\(s\)/m);
    expect(r.out).toContain("config/config.local.yaml:\nthresholds:");
    // The audit names each false alarm with the rule that fired.
    expect(r.audit?.sets.map((s) => s.name)).toEqual([srv.url]);
    expect(r.audit?.sets[0]?.falseFlags.map((f) => f.id).sort()).toEqual([...FALSE_ALARMS].sort());
  }, 60_000);

  test("through the CLI, with the admin token from the admin.token file", async () => {
    const home = join(tmp, "home");
    const config = join(home, ".config", "stallguard");
    const t = testIo(home, { XDG_CONFIG_HOME: join(home, ".config") });
    // No token anywhere: said, exit 2.
    expect(await run(["calibrate", "--db", opencodeDb, "--labels-from", srv.url, "--quiet"], t.io)).toBe(2);
    expect(t.err()).toContain("--labels-from: the router's labels need the admin token");
    mkdirSync(config, { recursive: true });
    writeFileSync(join(config, "admin.token"), `${ADMIN}\n`, { mode: 0o600 });
    const ok = testIo(home, { XDG_CONFIG_HOME: join(home, ".config") });
    const args = ["calibrate", "--db", opencodeDb, "--labels-from", `${srv.url}/`, "--config", twitchy];
    expect(await run([...args, "--quiet"], ok.io), ok.err()).toBe(0);
    expect(ok.out()).toMatch(/^sweep: \d+ candidate\(s\)/m);
    expect(ok.out()).toMatch(/^proposed: /m);
    writeFileSync(join(config, "admin.token"), "wrong-token");
    const bad = testIo(home, { XDG_CONFIG_HOME: join(home, ".config") });
    expect(await run([...args, "--quiet"], bad.io)).toBe(1);
    expect(bad.err()).toContain("refused the admin token");
  }, 60_000);

  test("a labels file exported from the admin page works the same; one kind alone is said, not swept", async () => {
    const exported = join(tmp, "stallguard-labels.json");
    const res = await fetch(`${srv.url}/api/labels`, { headers: { authorization: `Bearer ${ADMIN}` } });
    writeFileSync(exported, await res.text());
    const r = await calibrateCaptured({ db: opencodeDb, labelsFrom: exported, config: twitchy, quiet: true });
    expect(r.code, r.err).toBe(0);
    expect(r.sweep?.proposed?.healthyFlagged).toBe(0);

    const onlyFalseAlarms = join(tmp, "only.json");
    const doc = JSON.parse(readFileSync(exported, "utf8")) as Record<string, { label: string }>;
    writeFileSync(
      onlyFalseAlarms,
      JSON.stringify(Object.fromEntries(Object.entries(doc).filter(([, v]) => v.label === "healthy"))),
    );
    const one = await calibrateCaptured({
      db: opencodeDb,
      labelsFrom: onlyFalseAlarms,
      config: twitchy,
      quiet: true,
    });
    expect(one.code, one.err).toBe(0);
    expect(one.sweep).toBeNull();
    expect(one.err).toContain("2 marked healthy (false alarm) and 0 marked loop (confirmed loop)");
    expect(one.audit?.sets[0]?.falseFlags).toHaveLength(2);
  }, 60_000);
});
