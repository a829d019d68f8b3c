// Records fresh sessions from the real opencode binary (the same scenarios as
// test/fixtures/record-corpus.ts), then runs the built CLI on them: on the
// live opencode.db while opencode is still running, on its copy, through the
// server's HTTP API and on `opencode export` output. A change in opencode's
// stored shapes shows up here as a wrong verdict.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { configSchema } from "../../shared/index.ts";
import {
  exportSession,
  projectFiles,
  type Recorded,
  recordScenario,
  scenario,
  scrub,
} from "../fixtures/record-corpus.ts";
import { BUILT_CLI, type CliResult, node } from "../helpers/built-cli.ts";
import { type ModelServer, scriptRouter, startModelServer } from "../helpers/model-server.ts";
import { type OpencodeServer, startOpencode } from "../helpers/opencode.ts";

const CLI = BUILT_CLI;

type Session = {
  id: string;
  worst: string;
  calls: number;
  first_flag_call: number | null;
  top_target: string | null;
};
function sessionsOf(r: CliResult): Map<string, Session> {
  expect(r.code, r.stderr).toBe(0);
  const doc = JSON.parse(r.stdout) as { sessions: Session[] };
  return new Map(doc.sessions.map((s) => [s.id, s]));
}

describe("calibrate on sessions the real opencode binary just recorded", () => {
  const router = scriptRouter();
  // The fake model and opencode, and the two sessions recorded once for every test.
  let model: ModelServer, oc: OpencodeServer, tmp: string;
  let loop: Recorded, healthy: Recorded;

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), "stallguard-cal-e2e-"));
    model = await startModelServer({
      script: router.script,
      usage: { prompt_tokens: 2000, completion_tokens: 40, cached_tokens: 1500 },
    });
    // Two short scenarios of the corpus: a loop and a fix that lands (about 20 model steps in all).
    const live = [scenario("bash-retry-loop"), scenario("edit-test")] as const;
    oc = await startOpencode({ modelUrl: model.url, projectFiles: projectFiles(live), git: true });
    loop = await recordScenario(oc, router, live[0]);
    healthy = await recordScenario(oc, router, live[1]);
  });

  afterAll(async () => {
    await oc?.stop();
    await model?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  test("--db on the live database while opencode runs: the loop is flagged, the fix is not", async () => {
    const s = sessionsOf(await node([CLI, "calibrate", "--db", oc.dbPath, "--json"]));
    const l = s.get(loop.sessionId);
    const h = s.get(healthy.sessionId);
    expect(l?.calls).toBe(12);
    expect(l?.worst).not.toBe("ok");
    // one failing call with one answer: flagged on its top_warn-th run
    expect(l?.first_flag_call).toBeLessThanOrEqual(configSchema.parse({}).thresholds.top_warn);
    expect(l?.top_target).toBe("bash sh check.sh");
    expect(h?.calls).toBe(6);
    expect(h?.worst).toBe("ok");
  });

  test("--copy, --server and --export give the same verdicts", async () => {
    const want = (m: Map<string, Session>) =>
      [loop.sessionId, healthy.sessionId].map((id) => [id, m.get(id)?.worst, m.get(id)?.first_flag_call]);
    const db = sessionsOf(await node([CLI, "calibrate", "--db", oc.dbPath, "--json"]));
    const copy = sessionsOf(await node([CLI, "calibrate", "--db", oc.dbPath, "--copy", "--json"]));
    const server = sessionsOf(await node([CLI, "calibrate", "--server", oc.url, "--json"]));
    const file = join(tmp, "loop.json");
    writeFileSync(file, JSON.stringify(scrub(await exportSession(oc, loop.sessionId), oc)));
    const exported = sessionsOf(await node([CLI, "calibrate", "--export", file, "--json"]));
    expect(want(copy)).toEqual(want(db));
    expect(want(server)).toEqual(want(db));
    expect(exported.get(loop.sessionId)?.worst).toBe(db.get(loop.sessionId)?.worst);
    expect(exported.get(loop.sessionId)?.first_flag_call).toBe(db.get(loop.sessionId)?.first_flag_call);
  });

  test("the table, the HTML report and a sweep over labelled live sessions", async () => {
    const labels = join(tmp, "labels.json");
    writeFileSync(labels, JSON.stringify({ [loop.sessionId]: "loop", [healthy.sessionId]: "healthy" }));
    const html = join(tmp, "report.html");
    const r = await node([
      CLI,
      "calibrate",
      "--db",
      oc.dbPath,
      "--session",
      `${loop.sessionId},${healthy.sessionId}`,
      "--html",
      html,
      "--sweep",
      "--labels",
      labels,
      "--grid",
      "stall_turns=2,4;fail_warn=3,4",
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`${loop.sessionId}\\s+build\\s+loop\\s+12\\s`));
    expect(r.stdout).toMatch(/sweep: 4 candidate\(s\)/);
    expect(r.stdout).toMatch(/proposed: .*loops caught 1\/1, healthy flagged 0\/1/);
    const page = readFileSync(html, "utf8");
    expect(page.match(/<svg /g)).toHaveLength(2);
    expect(page).toMatch(/^[\t\n\x20-\x7e]*$/);
  });
});
