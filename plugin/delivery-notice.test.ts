import { describe, expect, it } from "vitest";
import { DeliveryNotice, undeliveredText } from "./delivery-notice.ts";

const down = { ok: false as const, url: "http://127.0.0.1:4870", reason: "no answer: ECONNREFUSED" };
const up = { ok: true as const, url: "http://127.0.0.1:4870" };

describe("DeliveryNotice", () => {
  it("warns once per failing stretch, after the grace, and again only after a delivery", () => {
    const n = new DeliveryNotice(5000);
    expect(n.state).toBe("pending");
    expect(n.record(down, 0)).toBeNull();
    expect(n.state).toBe("failing");
    expect(n.record(down, 4999)).toBeNull();
    expect(n.record(down, 5000)).toBe("warn");
    expect(n.since).toBe(0);
    expect(n.record(down, 60_000)).toBeNull();
    expect(n.record(up, 61_000)).toBe("recovered");
    expect(n.state).toBe("ok");
    expect(n.record(up, 62_000)).toBeNull();
    expect(n.record(down, 70_000)).toBeNull();
    expect(n.record(down, 75_000)).toBe("warn");
  });

  it("a failure shorter than the grace says nothing, even when it repeats after deliveries", () => {
    const n = new DeliveryNotice(5000);
    for (let t = 0; t < 100_000; t += 10_000) {
      expect(n.record(down, t)).toBeNull();
      expect(n.record(up, t + 1000)).toBeNull();
    }
  });

  it("the words name the URL, the reason, what is kept and where the URL came from", () => {
    const t = undeliveredText(down, { since: 0, queued: 3, urlFrom: "the default" });
    expect(t.toast.message).toBe(
      "http://127.0.0.1:4870/progress: no answer: ECONNREFUSED; 3 report(s) kept and sent when it answers. Start stallguard serve, or set STALLGUARD_URL where opencode starts.",
    );
    expect(t.log).toBe(
      "cannot deliver reports to http://127.0.0.1:4870/progress since 1970-01-01T00:00:00.000Z (no answer: ECONNREFUSED); 3 report(s) kept and sent when it answers; the URL is the default",
    );
  });
});
