// The watchdog's pure decisions, without a server: what a tick reports, what
// it remembers after the report, and when it raises the router-down alert.
import { describe, expect, test } from "vitest";
import { configSchema } from "../../shared/index.ts";
import { type DbSeen, emptyDbSeen } from "./db-source.ts";
import type { Seen, WatchedTree } from "./discover.ts";
import { readability, replayTick, settleTick } from "./replay-trees.ts";
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
  db: emptyDbSeen("missing", "/d/opencode.db"),
  known: 1,
  servers: 1,
  listed: 1,
  trees: [],
  serverTrees: over.trees?.length ?? 0,
  shapeErrors: [],
  apiErrors: [],
  treeFailures: 0,
  truncated: false,
  ...over,
});

describe("replayTick", () => {
  test("no database and no server answering: quiet (not blind); the silent servers said once", () => {
    let state = emptyState();
    const logs: string[] = [];
    for (let i = 0; i < 4; i++) {
      const j = replayTick(state, seen({ servers: 0, listed: 0 }), config, T0 + i, { blindAfter: 3 });
      expect(j).toMatchObject({ blind: false, blindReason: null, read: 0, changed: [] });
      logs.push(...j.logs);
      state = settleTick(j, [], { status: "ok", detail: "", url: "u" }, seen()).state;
    }
    expect(logs).toEqual(["watchdog: warning: no opencode server answered for 3 ticks (1 known)"]);
    expect(state.last_tick_at).toBeNull();
    // Nothing known, nothing there: nothing to say at all.
    const none = replayTick(emptyState(), seen({ known: 0, servers: 0, listed: 0 }), config, T0);
    expect(none).toMatchObject({ blind: false, logs: [] });
  });

  test("a looping session is one change; remembered only once delivered", () => {
    const j = replayTick(emptyState(), seen({ trees: [readLoop("ses_l", 30)] }), config, T0 + 10_000);
    expect(j.changed.map((c) => [c.transition.session_id, c.transition.verdict])).toEqual([
      ["ses_l", "looping"],
    ]);
    const down = settleTick(j, j.changed, { status: "down", detail: "x", url: "http://r" }, seen());
    expect(down.alert?.body).toContain("1 session(s) flagged");
    expect(down.state.sessions.ses_l).toBeUndefined();
    expect(down.state.last_tick_at).toBeNull();
    // The undelivered change is found again next tick.
    const again = replayTick(down.state, seen({ trees: [readLoop("ses_l", 30)] }), config, T0 + 20_000);
    expect(again.changed).toHaveLength(1);
    const ok = settleTick(again, again.changed, { status: "ok", detail: "", url: "http://r" }, seen());
    expect(ok.state.sessions.ses_l?.verdict).toBe("looping");
    expect(ok.state.last_tick_at).toBe(T0 + 20_000);
    expect(
      replayTick(ok.state, seen({ trees: [readLoop("ses_l", 30)] }), config, T0 + 30_000).changed,
    ).toEqual([]);
  });

  test("a server that answers but lists nothing in a known shape is blind, warned once", () => {
    const bad = seen({ listed: 0, shapeErrors: ["http://oc: unexpected opencode API shape"] });
    const j = replayTick(emptyState(), bad, config, T0);
    expect(j).toMatchObject({ blind: true, blindReason: "unexpected_shape" });
    expect(j.logs[0]).toContain("the watchdog is blind");
    expect(replayTick(j.state, bad, config, T0 + 1).logs).toEqual([]);
  });

  test("blind means no source could be read although one was there", () => {
    const db = (state: DbSeen["state"]): DbSeen => ({
      ...emptyDbSeen(
        state,
        "/d/opencode.db",
        state === "read" || state === "missing" ? null : `/d: ${state}`,
      ),
    });
    const shape = ["http://oc: unexpected opencode API shape at GET /session"];
    const cases: Array<[string, Partial<Seen>, { read: number; blind: boolean; reason: string | null }]> = [
      [
        "the file read, no server",
        { db: db("read"), known: 0, servers: 0, listed: 0 },
        { read: 1, blind: false, reason: null },
      ],
      [
        "the file read, a server in an odd shape",
        { db: db("read"), listed: 0, shapeErrors: shape },
        { read: 1, blind: false, reason: null },
      ],
      ["no file, no server", { known: 0, servers: 0, listed: 0 }, { read: 0, blind: false, reason: null }],
      [
        "an unreadable file, no server",
        { db: db("unreadable"), servers: 0, listed: 0 },
        { read: 0, blind: true, reason: "db_unreadable" },
      ],
      [
        "an unreadable file, a server read",
        { db: db("unreadable") },
        { read: 1, blind: false, reason: null },
      ],
      [
        "a foreign file, a server failing",
        { db: db("unexpected_shape"), listed: 0, apiErrors: ["x"] },
        { read: 0, blind: true, reason: "unexpected_shape" },
      ],
      [
        "no file, a server failing",
        { listed: 0, apiErrors: ["http://oc: HTTP 500"] },
        { read: 0, blind: true, reason: "api_error" },
      ],
    ];
    for (const [name, over, want] of cases) {
      const r = readability(seen(over));
      expect({ name, read: r.read, blind: r.blind, reason: r.reason }).toEqual({ name, ...want });
    }
    // A source with a problem is said once, "blind" only when nothing was read.
    const partial = replayTick(
      emptyState(),
      seen({ db: db("read"), listed: 0, shapeErrors: shape }),
      config,
      T0,
    );
    expect(partial.logs).toEqual([`watchdog: warning: ${shape[0]}`]);
    const blind = replayTick(emptyState(), seen({ db: db("unreadable"), servers: 0, listed: 0 }), config, T0);
    expect(blind.logs).toEqual(["watchdog: warning: the watchdog is blind: /d: unreadable"]);
  });
});
