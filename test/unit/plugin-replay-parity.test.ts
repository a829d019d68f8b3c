// The live plugin path and `stallguard calibrate` judge the same sessions the
// same way. Each recorded session (test/fixtures/recorded, and the corpora in
// ../shared/corpus when they are there) goes through replay (what calibrate
// runs) and, as the hook and event calls opencode would have made, through the
// Stallguard object's entry points; the verdict after every tool call must be
// the same. The work-tree probe is off: a recording has no work tree, so both
// paths judge bash writes from the command.
//
// Also here, on the same live path: a failed tool part gives the same outcome
// as the stored adapter, and no report carries anything of the tools' answers.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { hooksOf } from "../../plugin/_test-hooks.ts";
import { startReceiver } from "../../plugin/_test-receiver.ts";
import { type ProbeLike, Stallguard } from "../../plugin/runtime.ts";
import { loadSettings } from "../../plugin/settings.ts";
import { loadExports, type SourceSession } from "../../router-ext/calibrate/sources.ts";
import {
  fromToolPart,
  type Observation,
  observationsFromMessages,
  type Policy,
  parseConfig,
  policyFromConfig,
  replay,
  type StoredMessage,
  treesOf,
} from "../../shared/index.ts";
import { landingSession } from "../helpers/landing-session.ts";

const REPO = join(import.meta.dirname, "..", "..");
const RECORDED = join(REPO, "test", "fixtures", "recorded");
const CORPUS = join(REPO, "..", "shared", "corpus");

const cfg = parseConfig([
  { source: "config.yaml", text: readFileSync(join(REPO, "config", "config.yaml"), "utf8") },
]);
if (!cfg.ok) throw new Error("config/config.yaml does not parse");
const policy = policyFromConfig(cfg.config);

type Rec = Record<string, unknown>;
const obj = (v: unknown): Rec => (v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Rec) : {});
const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0);

/** One hook or event call opencode would make, with the time the stored adapter gives its observation. */
interface Step {
  time: number;
  /** The observation the stored adapter makes for it; "none" for a live call that makes none. */
  kind: Observation["kind"] | "none";
  sessionId: string;
  /** Clock value while the step runs (what Date.now() read live). */
  clock: number;
  run: (sg: Stallguard) => Promise<void> | void;
}

/**
 * The live calls for one stored session, one per observation the stored
 * adapter makes, in its order: user turn (chat.message), assistant step
 * (chat.headers, then message.updated for its spend), then its finished
 * tools (tool.execute.after plus the completed part event, or only the part
 * event for a failed tool, since opencode skips the after hook on a throw).
 */
function liveSteps(s: SourceSession): Step[] {
  const out: Step[] = [];
  let resuming = false;
  for (const m of s.messages) {
    const info = obj(m.info);
    const parts = Array.isArray(m.parts) ? (m.parts as Rec[]) : [];
    const created = num(obj(info.time).created);
    if (info.role === "user") {
      // A compaction: opencode writes the marker, asks for the summary (chat.headers with
      // agent "compaction"), then writes its resume turn directly: the synthetic continue
      // (only a part event live) or the user's message replayed (no chat.message either).
      if (parts.some((p) => p.type === "compaction")) {
        resuming = true;
        out.push({
          time: created,
          kind: "compaction",
          sessionId: s.id,
          clock: created,
          run: (sg) => hooksOf(sg).headers({ sessionID: s.id, agent: "compaction" }, { headers: {} }),
        });
        continue;
      }
      const resume = parts.some((p) => obj(p.metadata).compaction_continue === true);
      if (resuming || resume) {
        resuming = false;
        out.push({
          time: created,
          kind: "none",
          sessionId: s.id,
          clock: created,
          run: (sg) => {
            for (const p of parts)
              hooksOf(sg).event({
                type: "message.part.updated",
                properties: { part: { ...p, sessionID: s.id, messageID: info.id } },
              });
          },
        });
        continue;
      }
      out.push({
        time: created,
        kind: "user",
        sessionId: s.id,
        clock: created,
        run: (sg) =>
          hooksOf(sg).chatMessage(
            { sessionID: s.id, agent: info.agent, messageID: info.id },
            { message: { ...info, sessionID: s.id }, parts },
          ),
      });
      continue;
    }
    if (info.role !== "assistant") continue;
    // The summary request was observed as the compaction; its spend still counts.
    const summary = info.summary === true || info.agent === "compaction" || info.mode === "compaction";
    if (!summary) resuming = false;
    const agent = info.agent ?? info.mode;
    if (!summary)
      out.push({
        time: created,
        kind: "turn",
        sessionId: s.id,
        clock: created,
        run: (sg) =>
          hooksOf(sg).headers(
            { sessionID: s.id, agent, model: { id: info.modelID, providerID: info.providerID } },
            { headers: {} },
          ),
      });
    // A finished message always has time.completed live; a recording may lack it (the adapter uses created).
    const completed = num(obj(info.time).completed) || created;
    out.push({
      time: completed,
      kind: "usage",
      sessionId: s.id,
      clock: completed,
      run: (sg) =>
        hooksOf(sg).event({
          type: "message.updated",
          properties: {
            sessionID: s.id,
            info: { ...info, sessionID: s.id, time: { ...obj(info.time), completed } },
          },
        }),
    });
    for (const part of parts) {
      const state = obj(part.state);
      if (part.type !== "tool" || (state.status !== "completed" && state.status !== "error")) continue;
      const t = obj(state.time);
      const time = num(t.end) || num(t.start) || created;
      const live = { ...part, sessionID: s.id, callID: part.callID ?? part.id };
      const event = { type: "message.part.updated", properties: { sessionID: s.id, part: live } };
      out.push({
        time,
        kind: "tool",
        sessionId: s.id,
        clock: time,
        run: (sg) => {
          if (state.status === "completed") {
            hooksOf(sg).toolAfter(
              { tool: part.tool, sessionID: s.id, callID: live.callID, args: state.input },
              { title: state.title ?? "", output: state.output, metadata: state.metadata },
            );
          }
          // Published after the hook; counted only when the hook did not count the call.
          hooksOf(sg).event(event);
        },
      });
    }
  }
  return out;
}

interface Tick {
  session: string;
  call: number;
  landed: number;
  verdict: string;
  reason: string | null;
}

/** Every session of one tree through one Stallguard, in replay's merged order; the verdict after each call. */
async function liveTicks(tree: SourceSession[], pol: Policy): Promise<Tick[]> {
  let clock = 0;
  const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
  const sg = new Stallguard({
    settings: { ...settings, policy: pol, toasts: false, maxSessions: 10_000 },
    directory: tree[0]?.directory ?? null,
    now: () => clock,
    // No router in this test: every report is answered at once.
    fetch: async () => new Response("{}", { status: 200 }),
  });
  const all = tree.flatMap((s, si) => liveSteps(s).map((step, i) => ({ step, si, i })));
  all.sort((a, b) => a.step.time - b.step.time || a.si - b.si || a.i - b.i);
  for (const s of tree) {
    hooksOf(sg).event({
      type: "session.created",
      properties: { info: { id: s.id, parentID: s.parentId ?? undefined } },
    });
  }
  const ticks: Tick[] = [];
  const calls = new Map<string, number>();
  for (const { step } of all) {
    clock = step.clock;
    await step.run(sg);
    if (step.kind !== "tool") continue;
    const n = (calls.get(step.sessionId) ?? 0) + 1;
    calls.set(step.sessionId, n);
    const t = sg.forest.get(step.sessionId);
    ticks.push({
      session: step.sessionId,
      call: n,
      landed: t?.signals().landed ?? 0,
      verdict: t?.lastVerdict.verdict ?? "ok",
      reason: t?.lastVerdict.reason ?? null,
    });
  }
  await sg.dispose();
  return ticks;
}

function replayTicks(tree: SourceSession[], pol: Policy): Tick[] {
  const out: Tick[] = [];
  const results = replay(tree, pol, { timeline: true });
  // Replay's timelines are per session; put them back in the merged call order by time.
  const merged: Array<{ tick: Tick; time: number; si: number; i: number }> = [];
  results.forEach((r, si) => {
    let landed = 0;
    r.timeline.forEach((t, i) => {
      if (t.landed) landed++;
      merged.push({
        tick: { session: r.id, call: t.call, landed, verdict: t.verdict, reason: t.reason },
        time: t.time,
        si,
        i,
      });
    });
  });
  merged.sort((a, b) => a.time - b.time || a.si - b.si || a.i - b.i);
  for (const m of merged) out.push(m.tick);
  return out;
}

/**
 * A session that loops through three compactions (summary, then opencode's resume turn:
 * the synthetic continue twice, the user's message replayed once) and a nudge:
 * the same read with the same answer on both sides of each, and an edit at the end.
 */
function compactingSession(): SourceSession {
  let t = 1_000;
  const msg = (role: string, parts: Rec[], extra: Rec = {}) => {
    t += 1000;
    return {
      info: { id: `m${t}`, role, agent: "build", time: { created: t, completed: t + 10 }, ...extra },
      parts,
    };
  };
  const read = (file: string) =>
    msg("assistant", [
      {
        type: "tool",
        tool: "read",
        callID: `c${t + 1000}`,
        state: {
          status: "completed",
          input: { filePath: `/p/${file}` },
          output: "same",
          metadata: {},
          time: { end: t + 1005 },
        },
      },
    ]);
  const messages: StoredMessage[] = [msg("user", [{ type: "text", text: "fix the nav" }])];
  for (let round = 0; round < 3; round++) {
    for (let i = 0; i < 3; i++) messages.push(read("nav.js"));
    messages.push(msg("user", [{ type: "compaction", auto: true }]));
    messages.push(
      msg("assistant", [{ type: "text", text: "summary" }], { agent: "compaction", summary: true }),
    );
    messages.push(
      round === 1
        ? msg("user", [{ type: "text", text: "fix the nav" }])
        : msg("user", [
            { type: "text", text: "Continue", synthetic: true, metadata: { compaction_continue: true } },
          ]),
    );
  }
  messages.push(
    msg("user", [{ type: "text", text: "[SYSTEM DIRECTIVE: OH-MY-OPENCODE - TODO CONTINUATION]" }]),
  );
  for (let i = 0; i < 3; i++) messages.push(read("nav.js"));
  return {
    id: "ses_compacting",
    parentId: null,
    directory: "/p",
    messages,
    updated: t,
    title: "compactions",
  };
}

function sources(): Array<{ name: string; sessions: SourceSession[] }> {
  const out = [
    { name: "recorded", sessions: loadExports([RECORDED]).sessions },
    { name: "compactions", sessions: [compactingSession()] },
  ];
  for (const name of ["real-trajectories", "real-trajectories-2"]) {
    const dir = join(CORPUS, name);
    if (existsSync(dir)) out.push({ name, sessions: loadExports([dir]).sessions });
  }
  return out;
}

/** Reasons each set must produce on both paths (alternations, re-read sweeps, one call in a row). */
const NEEDED_REASONS: Record<string, string[]> = {
  recorded: ["in_a_row", "retrace", "repeat_target", "whole_session"],
  "real-trajectories-2": ["in_a_row", "retrace", "duplicates"],
};

// Each set is a whole-corpus replay on both paths: 1 to 2 s alone, past vitest's 5 s default at load 10.
describe("live plugin path vs replay (calibrate)", { timeout: 60_000 }, () => {
  const sets = sources();

  it("each stored session maps to one live call per observation, in the adapter's order", () => {
    for (const s of sets[0]?.sessions ?? []) {
      const obs = observationsFromMessages(s, s.messages, policy);
      expect(
        liveSteps(s)
          .filter((x) => x.kind !== "none")
          .map((x) => `${x.kind}@${x.time}`),
        s.id,
      ).toEqual(obs.map((o) => `${o.kind}@${o.kind === "tool" ? o.call.time : o.time}`));
    }
  });

  for (const set of sets) {
    it(`gives the same verdict after every tool call: ${set.name}`, async () => {
      expect(set.sessions.length).toBeGreaterThan(0);
      let calls = 0;
      let flagged = 0;
      const reasons = new Set<string>();
      for (const tree of treesOf(set.sessions)) {
        const live = await liveTicks(tree, policy);
        const replayed = replayTicks(tree, policy);
        expect(live, tree[0]?.id).toEqual(replayed);
        calls += live.length;
        flagged += live.filter((t) => t.verdict !== "ok").length;
        for (const t of live) if (t.reason) reasons.add(t.reason);
      }
      // Both paths must have judged something, and flagged something, for the comparison to mean anything.
      expect(calls).toBeGreaterThan(10);
      expect(flagged).toBeGreaterThan(0);
      // The repetition rules of issue 20 among them, where the set has their shapes.
      for (const r of NEEDED_REASONS[set.name] ?? []) expect([...reasons], set.name).toContain(r);
    });
  }

  if (sets.length === 1)
    it.skip("../shared/corpus is not beside the repo: only the recorded sessions ran", () => {});
});

describe("the live path's answers stay local", () => {
  it("a failed tool part gives the stored adapter's outcome; the hook's output is hashed the same way", async () => {
    let clock = 1000;
    const { settings } = loadSettings({ env: { STALLGUARD_URL: "http://127.0.0.1:9" } });
    const sg = new Stallguard({
      settings: { ...settings, toasts: false },
      directory: "/repo",
      now: () => clock,
      fetch: async () => new Response("{}", { status: 200 }),
    });
    const seen: Array<string | null> = [];
    const forest = sg.forest;
    const observe = forest.observe.bind(forest);
    forest.observe = (o) => {
      if (o.kind === "tool") seen.push(o.call.outcome);
      return observe(o);
    };
    const errorPart = {
      id: "prt_1",
      type: "tool",
      tool: "read",
      callID: "call_1",
      sessionID: "ses_x",
      state: {
        status: "error",
        input: { filePath: "/repo/missing.py" },
        error: "File not found: /repo/missing.py",
        time: { start: 1000, end: 1000 },
      },
    };
    hooksOf(sg).event({ type: "message.part.updated", properties: { part: errorPart } });
    const stored = fromToolPart(errorPart, {
      sessionId: "ses_x",
      parentId: null,
      agent: "build",
      directory: "/repo",
      testPatterns: policy.testPatterns,
    });
    clock = 2000;
    const bashArgs = { command: "python check.py", description: "Run" };
    const metadata = { exit: 1, output: "Traceback: boom", truncated: false };
    hooksOf(sg).toolAfter(
      { tool: "bash", sessionID: "ses_x", callID: "call_2", args: bashArgs },
      { title: "python check.py", output: "Traceback: boom", metadata },
    );
    const storedBash = fromToolPart(
      {
        type: "tool",
        tool: "bash",
        callID: "call_2",
        state: {
          status: "completed",
          input: bashArgs,
          output: "Traceback: boom",
          metadata,
          time: { end: 2000 },
        },
      },
      {
        sessionId: "ses_x",
        parentId: null,
        agent: "build",
        directory: "/repo",
        testPatterns: policy.testPatterns,
      },
    );
    expect(stored?.outcome).toMatch(/^[0-9a-f]{32}$/);
    expect(seen).toEqual([stored?.outcome, storedBash?.outcome]);
    await sg.dispose();
  });

  it("no report carries the output, its hash, the work-tree fingerprints or the arguments past the target", async () => {
    const rx = await startReceiver();
    let clock = 1_000_000;
    const { settings } = loadSettings({ env: { STALLGUARD_URL: rx.url } });
    const fingerprints = { before: "f".repeat(32), after: "e".repeat(32) };
    const probe: ProbeLike = {
      refresh: () => undefined,
      started: () => undefined,
      ended: () => undefined,
      before: async () => undefined,
      after: () => Promise.resolve(fingerprints),
      close: () => undefined,
    };
    const sg = new Stallguard({
      settings: { ...settings, toasts: false, heartbeatMs: 60_000 },
      directory: "/repo",
      now: () => clock,
      // A probe that always answers, standing in for git: its fingerprints must stay local.
      probe,
    });
    const seenOutcomes: string[] = [];
    const observe = sg.forest.observe.bind(sg.forest);
    sg.forest.observe = (o) => {
      if (o.kind === "tool" && o.call.outcome) seenOutcomes.push(o.call.outcome);
      return observe(o);
    };
    const SECRET_OUT = "PRIVOUT_7781 the tool said this";
    const SECRET_ARG = "PRIVARG_5512";
    for (let i = 0; i < 14; i++) {
      clock += 1000;
      await hooksOf(sg).headers({ sessionID: "ses_p", agent: "build", model: { id: "m" } }, { headers: {} });
      hooksOf(sg).toolAfter(
        {
          tool: "bash",
          sessionID: "ses_p",
          callID: `c${i}`,
          args: { command: `node check.mjs --flag ${SECRET_ARG}` },
        },
        { title: "", output: SECRET_OUT, metadata: { exit: 1, output: SECRET_OUT, truncated: false } },
      );
    }
    sg.heartbeat();
    await sg.dispose();
    const wire = JSON.stringify(rx.messages);
    expect(rx.messages.some((m) => m.type === "transition")).toBe(true);
    expect(seenOutcomes.length).toBe(14);
    for (const secret of [SECRET_OUT, "PRIVOUT", SECRET_ARG, fingerprints.before, fingerprints.after])
      expect(wire).not.toContain(secret);
    for (const h of new Set(seenOutcomes)) expect(wire).not.toContain(h);
    await rx.close();
  });
});

// Landing, live with the real work-tree probe vs replay, on real git trees
// (test/helpers/landing-session.ts). Another process writes into the same
// checkout between the calls and while they run; what a run writes is its
// output; the ways agents edit through bash land on both paths.
describe("what lands: the live probe on a real work tree vs replay", { timeout: 120_000 }, () => {
  const MAKEFILE =
    'test:\n\t@mkdir -p coverage && date +%N > coverage/lcov.info && date +%N > junit.xml\n\t@echo "ran in $$(date +%N) ns"\n\t@grep -q "value = 9" src/app.js\n';
  const PATCH =
    "--- a/src/lib.js\n+++ b/src/lib.js\n@@ -1 +1 @@\n-export const lib = 1;\n+export const lib = 2;\n";
  const files = {
    "src/app.js": "export const value = 1;\n",
    "src/lib.js": "export const lib = 1;\n",
    "src/other.js": "// another agent's file\n",
    Makefile: MAKEFILE,
    "check.sh": 'grep -q "value = 9" src/app.js\n',
    "bump.sh": 'sed -i "s/value = [0-9]*/value = $1/" src/app.js\n',
    "gen.sh": "date +%N > result.json\n",
    "fix.patch": PATCH,
  };
  const times = (n: number, command: string) => Array.from({ length: n }, () => command);
  const appender = (i: number) => ({ "app.log": `line ${i}\n`, "status.json": `{"tick":${i}}\n` });
  const COMMIT = "git -c user.name=t -c user.email=t@example.invalid commit -qam 'value 9'";
  const flagged = (ticks: Array<{ verdict: string }>) => ticks.some((t) => t.verdict !== "ok");

  it("a test rerun loop while another process appends to a log and rewrites a status file: flagged alike", async () => {
    const r = await landingSession(
      { files, commands: times(12, "make test"), between: appender, during: appender },
      policy,
    );
    expect(r.live).toEqual(r.replayed);
    expect(flagged(r.live)).toBe(true);
    expect(r.live.at(-1)?.landed).toBe(0);
  });

  it("an unnamed check rerun while another process writes beside it: flagged alike", async () => {
    const r = await landingSession(
      { files, commands: times(12, "sh check.sh"), between: appender, during: appender },
      policy,
    );
    expect(r.live).toEqual(r.replayed);
    expect(flagged(r.live)).toBe(true);
  });

  it("`make test > out.txt` (new timings each run, reports, coverage) and reading it: flagged alike", async () => {
    const commands = times(7, "make test > out.txt 2>&1; cat out.txt").flatMap((c) => [c, "cat out.txt"]);
    const r = await landingSession({ files, commands }, policy);
    expect(r.live).toEqual(r.replayed);
    expect(flagged(r.live)).toBe(true);
    expect(r.live.at(-1)?.landed).toBe(0);
  });

  it("another agent editing a source file between and during a test loop: flagged alike", async () => {
    const edit = (i: number) => ({ "src/other.js": `// edit ${i}\n` });
    const r = await landingSession(
      { files, commands: times(12, "make test"), between: edit, during: edit },
      policy,
    );
    expect(r.live).toEqual(r.replayed);
    expect(flagged(r.live)).toBe(true);
  });

  it("a bash-only editor (sed -i, a failing check between edits, a commit) beside a log writer: never flagged, the same landings", async () => {
    const commands = [2, 3, 4, 5, 6, 7, 8, 9].flatMap((v) => [
      `sed -i 's/value = [0-9]*/value = ${v}/' src/app.js`,
      "sh check.sh",
    ]);
    const r = await landingSession({ files, commands: [...commands, COMMIT], between: appender }, policy);
    expect(r.live).toEqual(r.replayed);
    expect(flagged(r.live)).toBe(false);
    expect(r.live.at(-1)?.landed).toBe(9);
  });

  it("each way of editing through bash lands on both paths: heredoc, tee, a python rewrite, git apply, cp, commit", async () => {
    const commands = [
      "cat > src/new.js <<'EOF'\nexport const fresh = true;\nEOF",
      "printf 'export const t = 1;\\n' | tee src/tee.js",
      "python3 - <<'PY'\nfrom pathlib import Path\np = Path('src/app.js')\np.write_text(p.read_text().replace('1', '2'))\nPY",
      "git apply fix.patch",
      "cp src/app.js src/copy.js",
      `git add -A && ${COMMIT}`,
    ];
    const r = await landingSession({ files, commands, between: appender }, policy);
    expect(r.live).toEqual(r.replayed);
    expect(r.live.map((t) => t.landed)).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it("where replay must differ: edits a script makes (sh bump.sh) land live only; a rerun's own output lands at most once", async () => {
    const bumps = [2, 3, 4, 5].flatMap((v) => [`sh bump.sh ${v}`, "sh check.sh"]);
    const r = await landingSession({ files, commands: bumps }, policy);
    expect(r.live.at(-1)?.landed).toBe(4);
    expect(r.replayed.at(-1)?.landed).toBe(0);
    const gen = await landingSession({ files, commands: times(12, "sh gen.sh") }, policy);
    expect(gen.live.at(-1)?.landed).toBeLessThanOrEqual(1);
    expect(flagged(gen.live)).toBe(true);
    expect(flagged(gen.replayed)).toBe(true);
  });
});
