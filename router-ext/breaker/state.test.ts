import { describe, expect, it } from "vitest";
import { closedState, cooldownFor, fallbackFor, isOpen, resume, tick, trip } from "./state.ts";

const b = { cooldownMs: 15 * 60_000, backoff: 2, maxCooldownMs: 4 * 60 * 60_000 };
const min = 60_000;

describe("breaker state machine", () => {
  it("opens on a trip, half-opens after the cooldown, closes after a quiet probe", () => {
    let s = trip(closedState("m"), 0, b);
    expect(s.phase).toBe("open");
    expect(isOpen(s, 14 * min)).toBe(true);
    s = tick(s, 15 * min);
    expect(s.phase).toBe("half_open");
    expect(isOpen(s, 16 * min)).toBe(false);
    s = tick(s, 30 * min);
    expect(s.phase).toBe("closed");
    expect(s.trips).toBe(0);
  });

  it("backs off: a trip during the probe reopens with a doubled cooldown, capped", () => {
    let s = trip(closedState("m"), 0, b);
    s = tick(s, 15 * min);
    s = trip(s, 20 * min, b);
    expect(s.phase).toBe("open");
    expect(s.trips).toBe(2);
    expect(s.until).toBe(20 * min + 30 * min);
    expect(cooldownFor(10, b)).toBe(b.maxCooldownMs);
  });

  it("a trip while open changes nothing", () => {
    const s = trip(closedState("m"), 0, b);
    expect(trip(s, 5 * min, b)).toEqual(s);
  });

  it("resume closes at once and records who and when", () => {
    const s = resume(trip(closedState("m"), 0, b), 3 * min, "admin");
    expect(s.phase).toBe("closed");
    expect(s.resumedBy).toBe("admin");
    expect(s.resumedAt).toBe(3 * min);
    expect(isOpen(s, 4 * min)).toBe(false);
  });

  it("finds fallbacks by exact model, then longest provider prefix", () => {
    const f = { "z-ai/glm-5.3-flash": "z-ai/glm-4.6", "z-ai/": "openai/gpt-5-mini", "openrouter/z-ai/": "x" };
    expect(fallbackFor("z-ai/glm-5.3-flash", f)).toBe("z-ai/glm-4.6");
    expect(fallbackFor("z-ai/other", f)).toBe("openai/gpt-5-mini");
    expect(fallbackFor("openrouter/z-ai/m", f)).toBe("x");
    expect(fallbackFor("anthropic/claude", f)).toBeNull();
  });
});
