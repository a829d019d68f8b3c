import { describe, expect, it } from "vitest";
import { type AdmitSettings, admitAlert, createAdmitState } from "./admit.ts";
import type { Alert } from "./types.ts";

const MIN = 60_000;
const settings = (over: Partial<AdmitSettings> = {}): AdmitSettings => ({
  enabled: true,
  min_severity: "warning",
  resolve_messages: true,
  lifecycle: false,
  rate_limit: { count: 100, per: 60 * MIN },
  quiet_window: 10 * MIN,
  ...over,
});
const alert = (over: Partial<Alert> = {}): Alert => ({
  dedup_key: "root",
  severity: "warning",
  state: "trigger",
  title: "t",
  summary: "s",
  details: "",
  source: "no-progress",
  at: 0,
  ...over,
});
const resolve = (severity: Alert["severity"] = "warning") => alert({ state: "resolve", severity });

describe("admitAlert", () => {
  it("filters disabled channels and severities below min_severity", () => {
    expect(admitAlert(createAdmitState(), settings({ enabled: false }), alert(), 0)).toEqual({
      admit: false,
      why: "filtered",
    });
    const s = settings({ min_severity: "critical" });
    const st = createAdmitState();
    expect(admitAlert(st, s, alert(), 0).admit).toBe(false);
    expect(admitAlert(st, s, alert({ severity: "critical" }), 0).admit).toBe(true);
  });

  it("suppresses non-critical repeats inside the quiet window, lets critical through", () => {
    const st = createAdmitState();
    const s = settings();
    expect(admitAlert(st, s, alert(), 0).admit).toBe(true);
    expect(admitAlert(st, s, alert(), 5 * MIN)).toEqual({ admit: false, why: "suppressed" });
    expect(admitAlert(st, s, alert({ dedup_key: "other" }), 5 * MIN).admit).toBe(true);
    expect(admitAlert(st, s, alert({ severity: "critical", state: "escalate" }), 6 * MIN)).toMatchObject({
      admit: true,
      alert: { state: "escalate" },
    });
    expect(admitAlert(st, s, alert(), 16 * MIN + 1).admit).toBe(true);
  });

  it("sends a resolve only where its trigger went, and not twice", () => {
    const st = createAdmitState();
    const s = settings();
    admitAlert(st, s, alert(), 0);
    expect(admitAlert(st, s, resolve(), MIN).admit).toBe(true);
    // Flapping: the second trigger is inside the quiet window, so its resolve is held back too.
    expect(admitAlert(st, s, alert(), 2 * MIN).admit).toBe(false);
    expect(admitAlert(st, s, resolve(), 3 * MIN)).toEqual({ admit: false, why: "suppressed" });
  });

  it("judges a resolve for an unknown key by its severity", () => {
    const s = settings({ min_severity: "critical" });
    expect(admitAlert(createAdmitState(), s, resolve("warning"), 0).admit).toBe(false);
    expect(admitAlert(createAdmitState(), s, resolve("critical"), 0).admit).toBe(true);
  });

  it("honours resolve_messages except on lifecycle channels", () => {
    const off = settings({ resolve_messages: false });
    const st = createAdmitState();
    admitAlert(st, off, alert(), 0);
    expect(admitAlert(st, off, resolve(), MIN)).toEqual({ admit: false, why: "filtered" });
    const pd = settings({ resolve_messages: false, lifecycle: true });
    const st2 = createAdmitState();
    admitAlert(st2, pd, alert(), 0);
    expect(admitAlert(st2, pd, resolve(), MIN).admit).toBe(true);
  });

  it("turns an escalate into a trigger on a channel that never got the trigger", () => {
    const s = settings({ min_severity: "critical" });
    const st = createAdmitState();
    expect(admitAlert(st, s, alert(), 0).admit).toBe(false);
    expect(admitAlert(st, s, alert({ severity: "critical", state: "escalate" }), MIN)).toMatchObject({
      admit: true,
      alert: { state: "trigger", severity: "critical" },
    });
  });

  it("rate-limits per sliding window, except a resolve that closes a delivered alert", () => {
    const s = settings({ rate_limit: { count: 2, per: 60 * MIN }, quiet_window: 0 });
    const st = createAdmitState();
    expect(admitAlert(st, s, alert({ dedup_key: "a" }), 0).admit).toBe(true);
    expect(admitAlert(st, s, alert({ dedup_key: "b" }), MIN).admit).toBe(true);
    expect(admitAlert(st, s, alert({ dedup_key: "c", severity: "critical" }), 2 * MIN)).toEqual({
      admit: false,
      why: "rate_limited",
    });
    expect(admitAlert(st, s, resolve(), 3 * MIN).admit).toBe(false);
    expect(admitAlert(st, s, { ...resolve(), dedup_key: "a" }, 3 * MIN).admit).toBe(true);
    // The first admission leaves the window at 60 min; one slot opens.
    expect(admitAlert(st, s, alert({ dedup_key: "d" }), 60 * MIN).admit).toBe(true);
    expect(admitAlert(st, s, alert({ dedup_key: "e" }), 60 * MIN).admit).toBe(false);
  });
});
