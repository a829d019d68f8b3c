// Which parts a knob change rebuilds: each section maps to its part, and a
// change outside them rebuilds nothing.
import { describe, expect, it } from "vitest";
import { type Config, configSchema } from "../../shared/index.ts";
import { reloadOf } from "./hot-reload.ts";

const base = configSchema.parse({});
const none = { gate: false, notifier: false, retention: false, watchdog: false };
const edit = (f: (c: Config) => void): Config => {
  const c = structuredClone(base);
  f(c);
  return c;
};

describe("reloadOf", () => {
  it("rebuilds nothing when nothing it reads changed", () => {
    expect(reloadOf(structuredClone(base), base)).toEqual(none);
    expect(
      reloadOf(
        edit((c) => {
          c.server.public_session_metrics = !c.server.public_session_metrics;
        }),
        base,
      ),
    ).toEqual(none);
  });

  it("rebuilds the gate for its knobs only", () => {
    expect(
      reloadOf(
        edit((c) => {
          c.server.max_proxy_bytes += 1;
        }),
        base,
      ),
    ).toEqual({ ...none, gate: true });
    expect(
      reloadOf(
        edit((c) => {
          c.server.upstream_timeout += 1;
        }),
        base,
      ),
    ).toEqual({ ...none, gate: true });
  });

  it("swaps the notifier when notifications change", () => {
    const next = edit((c) => {
      c.notifications.queue_size += 1;
    });
    expect(reloadOf(next, base)).toEqual({ ...none, notifier: true });
  });

  it("restarts retention and the watchdog when the retention changes (the watchdog reads progress)", () => {
    const next = edit((c) => {
      c.progress.retention += 60_000;
    });
    expect(reloadOf(next, base)).toEqual({ ...none, retention: true, watchdog: true });
  });

  it("restarts the watchdog for thresholds", () => {
    const next = edit((c) => {
      c.thresholds.stall_turns += 1;
    });
    expect(reloadOf(next, base)).toEqual({ ...none, watchdog: true });
  });
});
