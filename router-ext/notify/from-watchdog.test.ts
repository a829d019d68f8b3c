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
  // Ticks as [at, servers, blind]; each row is a sequence and the alerts it raises.
  test.each<[string, Array<[number, number, boolean]>, string[]]>([
    [
      "blind while opencode runs: one trigger per spell, one resolve when it reads again",
      [
        [1, 1, false],
        [2, 1, true],
        [3, 2, true],
        [4, 1, true],
        [5, 1, false],
        [6, 1, true],
      ],
      ["trigger@2", "resolve@5", "trigger@6"],
    ],
    [
      "no opencode server at all is not an alarm",
      [
        [1, 0, true],
        [2, 0, true],
      ],
      [],
    ],
    [
      "a raised alert stays raised while opencode goes away and comes back blind",
      [
        [1, 1, true],
        [2, 0, true],
        [3, 1, true],
        [4, 0, false],
      ],
      ["trigger@1", "resolve@4"],
    ],
  ])("%s", (_name, ticks, alerts) => {
    expect(run(ticks.map(([at, servers, blind]) => ({ at, servers, blind })))).toEqual(alerts);
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

  test("ticks that say what they made of opencode.db: blind only when a source was there unread", () => {
    const at = (i: number, db: string, blind: boolean, servers = 0): TickView => ({
      at: i,
      servers,
      blind,
      db,
    });
    expect(
      run([
        at(1, "missing", false),
        at(2, "read", false),
        at(3, "unreadable", true),
        at(4, "unreadable", true),
      ]),
    ).toEqual(["trigger@3"]);
    expect(run([at(1, "unexpected_shape", true), at(2, "read", false)])).toEqual(["trigger@1", "resolve@2"]);
    const r = blindAlert(initialBlindState(), at(5, "unreadable", true, 1));
    expect(r.alert?.summary).toBe(
      "opencode.db could not be read; 1 opencode server(s) answered but their sessions could not be read; sessions without the plugin are unwatched",
    );
    const back = blindAlert(r.state, at(6, "read", false));
    expect(back.alert?.summary).toBe("the watchdog reads opencode's sessions again (opencode.db)");
  });
});
