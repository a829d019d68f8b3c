// The watchdog's pure decisions, without a server: what a tick reports, what
// it remembers after the report, and when it raises the router-down alert.
import { describe, expect, test } from "vitest";
import { configSchema } from "../../shared/index.ts";
import type { Seen, WatchedTree } from "./discover.ts";
import { judgeTick, settleTick } from "./judge.ts";
import { emptyState } from "./state.ts";

const config = configSchema.parse({ local_compute: { enabled: false } });
const T0 = 1_800_000_000_000;

/** A finished read of /p/plan.md. */
const readState = (t: number) => ({
  status: "completed",
  input: { filePath: "/p/plan.md" },
  metadata: {},
  time: { end: t + 2 },
});

/** One session that reads the same file `n` times, one step each. */
function readLoop(id: string, n: number): WatchedTree {
  const messages: Array<{ info: unknown; parts: unknown[] }> = [
    { info: { id: `u_${id}`, role: "user", time: { created: T0 }, agent: "build" }, parts: [] },
  ];
  for (let i = 1; i <= n; i++) {
    const t = T0 + i * 100;
    messages.push({
      info: { id: `a_${id}_${i}`, role: "assistant", time: { created: t, completed: t + 5 }, agent: "build" },
      parts: [{ type: "tool", tool: "read", callID: `r${i}`, state: readState(t) }],
    });
  }
  return [{ session: { id, directory: "/p", time: { updated: T0 + n * 100 } }, messages }];
}

const seen = (over: Partial<Seen> = {}): Seen => ({
  known: 1,
  servers: 1,
  listed: 1,
  trees: [],
  shapeErrors: [],
  apiErrors: [],
  treeFailures: 0,
  truncated: false,
  ...over,
});

describe("judgeTick", () => {
  test("no server: blind, warned once after blindAfter ticks, nothing judged", () => {
    let state = emptyState();
    const logs: string[] = [];
    for (let i = 0; i < 4; i++) {
      const j = judgeTick(state, seen({ servers: 0 }), config, T0 + i, { blindAfter: 3 });
      expect(j).toMatchObject({ blind: true, blindReason: "no_server", changed: [] });
      logs.push(...j.logs);
      state = settleTick(j, [], { outcome: "ok", detail: "", url: "u" }, seen()).state;
    }
    expect(logs).toHaveLength(1);
    expect(state.last_tick_at).toBeNull();
  });

  test("a looping session is one change; remembered only once delivered", () => {
    const j = judgeTick(emptyState(), seen({ trees: [readLoop("ses_l", 30)] }), config, T0 + 10_000);
    expect(j.changed.map((c) => [c.transition.session_id, c.transition.verdict])).toEqual([
      ["ses_l", "looping"],
    ]);
    const down = settleTick(j, j.changed, { outcome: "down", detail: "x", url: "http://r" }, seen());
    expect(down.alert?.body).toContain("1 session(s) flagged");
    expect(down.state.sessions.ses_l).toBeUndefined();
    expect(down.state.last_tick_at).toBeNull();
    // The undelivered change is found again next tick.
    const again = judgeTick(down.state, seen({ trees: [readLoop("ses_l", 30)] }), config, T0 + 20_000);
    expect(again.changed).toHaveLength(1);
    const ok = settleTick(again, again.changed, { outcome: "ok", detail: "", url: "http://r" }, seen());
    expect(ok.state.sessions.ses_l?.verdict).toBe("looping");
    expect(ok.state.last_tick_at).toBe(T0 + 20_000);
    expect(
      judgeTick(ok.state, seen({ trees: [readLoop("ses_l", 30)] }), config, T0 + 30_000).changed,
    ).toEqual([]);
  });

  test("a server that answers but lists nothing in a known shape is blind, warned once", () => {
    const bad = seen({ listed: 0, shapeErrors: ["http://oc: unexpected opencode API shape"] });
    const j = judgeTick(emptyState(), bad, config, T0);
    expect(j).toMatchObject({ blind: true, blindReason: "unexpected_shape" });
    expect(j.logs[0]).toContain("the watchdog is blind");
    expect(judgeTick(j.state, bad, config, T0 + 1).logs).toEqual([]);
  });
});
