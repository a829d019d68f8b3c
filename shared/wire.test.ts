import { describe, expect, it } from "vitest";
import { configSchema } from "./config.ts";
import { SessionForest, type VerdictChange } from "./forest.ts";
import { incidentReport } from "./incident-report.ts";
import { policyFromConfig } from "./policy.ts";
import { toToolCall } from "./tool-call.ts";
import {
  parseProgressBody,
  progressResponseSchema,
  toTransition,
  toWireSignals,
  transitionId,
} from "./wire.ts";

const policy = policyFromConfig(configSchema.parse({}));

/** A real VerdictChange: a worker under a parent re-reading one file until it is flagged. */
function realChanges(agent = "Sisyphus-Junior"): VerdictChange[] {
  const f = new SessionForest(policy);
  f.setParent("ses_worker", "ses_root");
  const out: VerdictChange[] = [];
  for (let i = 0; i < 25; i++) {
    out.push(
      ...f.observe({
        kind: "turn",
        sessionId: "ses_worker",
        parentId: "ses_root",
        agent,
        time: 1_717_000_000_000 + i * 10,
      }).changes,
    );
    f.observe({
      kind: "usage",
      sessionId: "ses_worker",
      messageId: `m${i}`,
      time: 1,
      costUsd: 0.0123456789,
      promptTokens: 200_000,
      contextTokens: 200_000 + i,
    });
    const call = toToolCall(
      {
        tool: "read",
        callId: `c${i}`,
        args: { filePath: "/r/admin/frontend/navbar.js" },
        metadata: {},
        status: "completed",
      },
      {
        sessionId: "ses_worker",
        parentId: "ses_root",
        agent,
        time: 1_717_000_000_000 + i * 10 + 5,
        directory: "/r",
        testPatterns: [],
      },
    );
    out.push(...f.observe({ kind: "tool", call }).changes);
  }
  return out;
}

function transition(c: VerdictChange, source: "plugin" | "watchdog" = "plugin") {
  const report = incidentReport(c);
  return toTransition(c, { source, report, pluginVersion: source === "plugin" ? "0.1.0" : null });
}

describe("wire: transitions built from real verdict changes", () => {
  const changes = realChanges();

  it("parseProgressBody accepts what toTransition builds", () => {
    expect(changes.map((c) => c.verdict)).toEqual(["stalling", "looping"]);
    for (const c of changes) {
      const t = transition(c);
      const r = parseProgressBody(t);
      expect(r.ok, JSON.stringify(r)).toBe(true);
      if (r.ok) expect(r.value).toEqual([t]);
    }
    const w = parseProgressBody(transition(changes[0] as VerdictChange, "watchdog"));
    expect(w.ok).toBe(true);
  });

  it("carries the right ids, agent slug, top target and snake_case signals", () => {
    const c = changes[1] as VerdictChange;
    const t = transition(c);
    const count = c.signals.topRepeat?.count ?? -1;
    expect(count).toBeGreaterThan(policy.thresholds.top_warn);
    expect(t).toMatchObject({
      type: "transition",
      source: "plugin",
      session_id: "ses_worker",
      parent_id: "ses_root",
      root_id: "ses_root",
      agent: "sisyphus-junior",
      verdict: "looping",
      previous: "stalling",
      reason: c.reason,
      top_target: "read admin/frontend/navbar.js",
      top_target_count: count,
      plugin_version: "0.1.0",
      at: c.at,
    });
    expect(t.signals.turns_since_landed).toBe(c.signals.turnsSinceLanded);
    expect(t.signals.usd_since_landed).toBeCloseTo(c.signals.usdSinceLanded, 5);
    expect(t.signals.usd_since_landed).toBeGreaterThan(0.1);
    expect(t.signals.context_tokens).toBe(c.signals.contextTokens);
    expect(t.signals.read_only).toBe(false);
    expect(t.at).toBeGreaterThan(1.7e12); // epoch milliseconds survive (no count clamp)
    expect(t.signals.last_landed_at).toBeNull();
    expect(t.report).toContain(`read admin/frontend/navbar.js x${c.signals.mostRepeated[0]?.count}`);
  });

  it("carries the evidence as coarse targets and counts; a plugin's message without it still passes", () => {
    const c = changes[1] as VerdictChange;
    const t = transition(c);
    expect(t.evidence).toEqual({
      top_targets: [{ target: "read admin/frontend/navbar.js", count: c.signals.mostRepeated[0]?.count }],
      same_result: { target: "read admin/frontend/navbar.js", count: c.signals.topSame?.count },
      fail_target: null,
      cycle: null,
      in_a_row: {
        target: "read admin/frontend/navbar.js",
        period: 1,
        repeats: c.signals.inARow?.repeats,
      },
      retrace: null,
    });
    expect(t.evidence?.in_a_row?.repeats).toBeGreaterThanOrEqual(2);
    // An evidence from before cycles, repeats in a row and retraces were reported still passes.
    const { cycle: _c, in_a_row: _r, retrace: _t, ...before } = t.evidence ?? {};
    expect(parseProgressBody({ ...t, evidence: before }).ok).toBe(true);
    const retrace = { target: "read src/a.py", period: 7, calls: 5, distinct: 5 };
    expect(parseProgressBody({ ...t, evidence: { ...t.evidence, retrace } }).ok).toBe(true);
    const badPeriod = parseProgressBody({
      ...t,
      evidence: { ...t.evidence, in_a_row: { ...t.evidence?.in_a_row, period: 3 } },
    });
    expect(!badPeriod.ok && badPeriod.errors[0]).toMatch(/^evidence\.in_a_row\.period: /);
    // Nothing but the coarse target (the path under the project) travels.
    expect(JSON.stringify(t.evidence)).not.toContain("/r/");
    const { evidence: _e, ...old } = t;
    expect(parseProgressBody(old).ok).toBe(true);
    const six = Array.from({ length: 6 }, (_, i) => ({ target: `read f${i}`, count: 2 }));
    const tooMany = parseProgressBody({ ...t, evidence: { ...t.evidence, top_targets: six } });
    expect(!tooMany.ok && tooMany.errors[0]).toMatch(/^evidence\.top_targets: /);
    const extra = parseProgressBody({ ...t, evidence: { ...t.evidence, output: "x" } });
    expect(!extra.ok && extra.errors).toEqual(["evidence.output: unknown field"]);
  });

  it("transition ids are stable for a retry and distinct per change and source", () => {
    const [a, b] = changes as [VerdictChange, VerdictChange];
    expect(transitionId("plugin", a)).toBe(transitionId("plugin", { ...a }));
    expect(transitionId("plugin", a)).not.toBe(transitionId("plugin", b));
    expect(transitionId("plugin", a)).not.toBe(transitionId("watchdog", a));
    // The idempotency key stays in its charset whatever the session id; an id outside
    // opencode's charset is refused by name (it could forge a log line or an alert).
    const odd = { ...a, sessionId: "ses with spaces/and?odd#chars".repeat(6) };
    const t = toTransition(odd, { source: "plugin", report: "", pluginVersion: null });
    expect(t.id).toMatch(/^[A-Za-z0-9_.:-]{8,128}$/);
    const parsed = parseProgressBody(t);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.errors.every((e) => e.startsWith("session_id:"))).toBe(true);
  });

  it("ids with control, bidi or lone-surrogate characters get a clear 400 issue", () => {
    const [a] = changes as [VerdictChange];
    const base = toTransition(a, { source: "plugin", report: "", pluginVersion: null });
    for (const bad of ["ses_a\u0000", "ses_a\nforged line", "ses_\u202egnp.exe", "ses_\ud800", "ses a"]) {
      const parsed = parseProgressBody({ ...base, session_id: bad, root_id: bad });
      expect(parsed.ok, JSON.stringify(bad)).toBe(false);
      if (!parsed.ok) expect(parsed.errors.join("\n")).toContain("opencode's id charset");
    }
  });

  it("toWireSignals clamps and rounds to what the schema allows", () => {
    const s = {
      ...(changes[0] as VerdictChange).signals,
      dupShare: 0.333333333,
      novelty: 1.5,
      usdSinceLanded: -1,
      calls: Number.NaN,
    };
    const w = toWireSignals(s);
    expect(w.dup_share).toBe(0.3333);
    expect(w.novelty).toBe(1);
    expect(w.usd_since_landed).toBe(0);
    expect(w.calls).toBe(0);
    expect(toWireSignals({ ...s, lastLandedAt: 1_764_000_000_123 }).last_landed_at).toBe(1_764_000_000_123);
  });
});

describe("wire: rejections name the path", () => {
  const good = transition(realChanges()[0] as VerdictChange);

  it("rejects unknown fields at the top level and inside signals", () => {
    const r = parseProgressBody({ ...good, args: "cat secret.txt" });
    expect(r).toEqual({ ok: false, errors: ["args: unknown field"] });
    const r2 = parseProgressBody({ ...good, signals: { ...good.signals, command: "x" } });
    expect(r2.ok).toBe(false);
    if (!r2.ok) expect(r2.errors).toContain("signals.command: unknown field");
  });

  it("rejects bad values with their path", () => {
    const r = parseProgressBody({ ...good, verdict: "exploding", agent: "Not A Slug" });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors.some((e) => e.startsWith("verdict: "))).toBe(true);
      expect(r.errors.some((e) => e.startsWith("agent: "))).toBe(true);
    }
    const r2 = parseProgressBody({ ...good, signals: { ...good.signals, dup_share: 2 } });
    expect(!r2.ok && r2.errors.some((e) => e.startsWith("signals.dup_share: "))).toBe(true);
    expect(parseProgressBody({ type: "nope" }).ok).toBe(false);
    expect(parseProgressBody(null).ok).toBe(false);
    expect(parseProgressBody("x").ok).toBe(false);
  });

  it("accepts batches of up to 100 mixed messages and names the index of a bad one", () => {
    const heartbeat = {
      type: "heartbeat",
      instance_id: "inst-1234",
      plugin_version: "0.1.0",
      at: 1,
      sessions: [
        {
          session_id: "s",
          parent_id: null,
          root_id: "s",
          agent: "build",
          verdict: "ok",
          turns: 1,
          turns_since_landed: 0,
          last_landed_at: null,
          context_tokens: 5,
        },
      ],
    };
    const tick = { type: "watchdog_tick", at: 2, servers: 1, sessions: 3, flagged: 0, blind: false };
    const r = parseProgressBody([good, heartbeat, tick]);
    expect(r.ok && r.value.map((m) => m.type)).toEqual(["transition", "heartbeat", "watchdog_tick"]);
    expect(parseProgressBody(Array.from({ length: 100 }, () => tick)).ok).toBe(true);
    expect(parseProgressBody(Array.from({ length: 101 }, () => tick)).ok).toBe(false);
    const bad = parseProgressBody([tick, { ...tick, blind: "no" }]);
    expect(!bad.ok && bad.errors).toEqual(["[1].blind: Invalid input: expected boolean, received string"]);
    const extra = parseProgressBody([tick, { ...tick, extra: 1 }]);
    expect(!extra.ok && extra.errors).toEqual(["[1].extra: unknown field"]);
    expect(parseProgressBody([]).ok).toBe(true);
  });

  it("a tick may say what it made of opencode.db; the answer may name sessions left to their plugin", () => {
    const tick = { type: "watchdog_tick", at: 2, servers: 0, sessions: 3, flagged: 0, blind: false };
    expect(parseProgressBody({ ...tick, db: "read" }).ok).toBe(true);
    const odd = parseProgressBody({ ...tick, db: "maybe" });
    expect(!odd.ok && odd.errors[0]).toMatch(/^db: /);
    const answer = { accepted: 1, duplicates: 0, directives: [] };
    expect(progressResponseSchema.parse({ ...answer, covered: ["ses_a"] }).covered).toEqual(["ses_a"]);
    expect(progressResponseSchema.safeParse({ ...answer, covered: ["bad id!"] }).success).toBe(false);
  });
});
