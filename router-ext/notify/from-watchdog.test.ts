import { describe, expect, test } from "vitest";
import { blindAlert, initialBlindState, type TickView } from "./from-watchdog.ts";
import { alertSchema } from "./types.ts";

function run(ticks: Array<TickView | null>) {
  let state = initialBlindState();
  const out: string[] = [];
  for (const t of ticks) {
    const r = blindAlert(state, t);
    state = r.state;
    if (r.alert) {
      expect(alertSchema.safeParse(r.alert).success).toBe(true);
      out.push(`${r.alert.state}@${r.alert.at}`);
    }
  }
  return out;
}

describe("blindAlert", () => {
  test("blind while opencode runs: one trigger per spell, one resolve when it reads again", () => {
    expect(
      run([
        { at: 1, servers: 1, blind: false },
        { at: 2, servers: 1, blind: true },
        { at: 3, servers: 2, blind: true },
        { at: 4, servers: 1, blind: true },
        { at: 5, servers: 1, blind: false },
        { at: 6, servers: 1, blind: true },
      ]),
    ).toEqual(["trigger@2", "resolve@5", "trigger@6"]);
  });

  test("no opencode server at all is not an alarm", () => {
    expect(
      run([
        { at: 1, servers: 0, blind: true },
        { at: 2, servers: 0, blind: true },
      ]),
    ).toEqual([]);
  });

  test("a raised alert stays raised while opencode goes away and comes back blind", () => {
    expect(
      run([
        { at: 1, servers: 1, blind: true },
        { at: 2, servers: 0, blind: true },
        { at: 3, servers: 1, blind: true },
        { at: 4, servers: 0, blind: false },
      ]),
    ).toEqual(["trigger@1", "resolve@4"]);
  });

  test("a stale tick (older than the freshness bound) raises nothing", () => {
    const tick = (at: number): TickView => ({ at, servers: 1, blind: true });
    const bound = { now: 10_000, maxAgeMs: 5000 };
    expect(blindAlert(initialBlindState(), tick(1000), bound).alert).toBeNull();
    expect(blindAlert(initialBlindState(), tick(8000), bound).alert?.state).toBe("trigger");
  });

  test("the same tick seen twice, or no tick yet, changes nothing", () => {
    const t: TickView = { at: 7, servers: 1, blind: true };
    expect(run([null, t, t, t])).toEqual(["trigger@7"]);
  });
});
