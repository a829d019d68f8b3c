import { describe, expect, it } from "vitest";
import type { Health } from "./schemas.ts";
import { watchdogNote, watchdogState } from "./watchdog-line.ts";

const health = (watchdog: Health["watchdog"]): Health => ({
  ok: true,
  version: "dev",
  db: "ok",
  schema_version: 155,
  mode: "warn",
  watchdog,
});
const now = 1_800_000_000_000;
const tick = (over: Partial<NonNullable<Health["watchdog"]>> = {}) => ({
  last_tick_at: now - 60_000,
  blind: false,
  flagged: 0,
  servers: 1,
  ...over,
});

describe("watchdogState", () => {
  it("no opencode running is quiet, not blind; blind is opencode answering without its sessions", () => {
    expect(watchdogState(health(tick({ blind: true, servers: 0 })), 300_000, now)).toBe("idle");
    expect(watchdogState(health(tick({ blind: true, servers: 2 })), 300_000, now)).toBe("blind");
    expect(watchdogState(health(tick()), 300_000, now)).toBe("ok");
  });

  it("no tick and a late tick are said; a router without the servers field reads blind as blind", () => {
    expect(watchdogState(health(null), 300_000, now)).toBe("none");
    expect(watchdogState(health(null), 300_000, now, false)).toBe("off");
    expect(watchdogState(health(tick({ last_tick_at: now - 1_000_000 })), 300_000, now)).toBe("late");
    expect(watchdogState(health(tick({ last_tick_at: now - 1_000_000 })), undefined, now)).toBe("ok");
    const { servers: _s, ...old } = tick({ blind: true });
    expect(watchdogState(health(old), 300_000, now)).toBe("blind");
  });

  it("says what the last tick read from opencode.db: idle only when nothing was there", () => {
    const read = health(tick({ servers: 0, sessions: 4, db: "read" }));
    expect(watchdogState(read, 300_000, now)).toBe("ok");
    expect(watchdogNote("ok", read)).toBe("read opencode.db: 4 session(s) judged");
    const none = health(tick({ servers: 0, sessions: 0, db: "missing" }));
    expect(watchdogState(none, 300_000, now)).toBe("idle");
    expect(watchdogNote("idle", none)).toBe("no opencode database found, no opencode server answered");
    const broken = health(tick({ servers: 0, blind: true, db: "unreadable" }));
    expect(watchdogState(broken, 300_000, now)).toBe("blind");
    expect(watchdogNote("blind", broken)).toBe("BLIND: opencode.db could not be read");
    expect(watchdogNote("late", read)).toBe("LATE: not running?");
  });
});
