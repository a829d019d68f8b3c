import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Heartbeat, type ProgressMessage, parseProgressBody } from "../shared/index.ts";
import { heartbeatSession } from "../test/helpers/wire-fixtures.ts";
import { type Receiver, startReceiver } from "./_test-receiver.ts";
import { outcomeOf, Reporter } from "./reporter.ts";

const beat = (at: number): Heartbeat => ({
  type: "heartbeat",
  instance_id: "sg_test",
  plugin_version: "dev",
  at,
  sessions: [],
});
const tick = (at: number): ProgressMessage => ({
  type: "watchdog_tick",
  at,
  servers: 1,
  sessions: 0,
  flagged: 0,
  blind: false,
});

describe("outcomeOf", () => {
  it.each([
    [200, "sent"],
    [204, "sent"],
    [400, "rejected"],
    [401, "retry"],
    [403, "retry"],
    [404, "rejected"],
    [413, "too_large"],
    [408, "retry"],
    [429, "retry"],
    [500, "retry"],
    [503, "retry"],
  ])("%i -> %s", (status, want) => {
    expect(outcomeOf(status)).toBe(want);
  });
});

describe("Reporter against a real receiver", () => {
  let rx: Receiver;
  let rep: Reporter | undefined;
  beforeEach(async () => {
    rx = await startReceiver({ token: "tok" });
  });
  afterEach(async () => {
    rep?.close();
    await rx.close();
  });
  const make = (over: Partial<ConstructorParameters<typeof Reporter>[0]> = {}) => {
    rep = new Reporter({
      url: rx.url,
      token: "tok",
      timeoutMs: 300,
      queueSize: 50,
      retryMs: 20,
      maxRetryMs: 80,
      ...over,
    });
    return rep;
  };

  it("sends with the bearer token; bodies pass the wire schema", async () => {
    const r = make();
    r.enqueue(tick(1));
    await expect.poll(() => rx.messages.length).toBe(1);
    expect(rx.bodies[0]?.authorization).toBe("Bearer tok");
    expect(parseProgressBody(JSON.parse(rx.bodies[0]?.raw ?? "")).ok).toBe(true);
    // The receiver sees the body before the reporter has read the answer and settled.
    await expect.poll(() => r.pending).toBe(0);
    expect(r.stats.sent).toBe(1);
  });

  it("batches what queued up while a send was in flight", async () => {
    const r = make();
    for (let i = 0; i < 5; i++) r.enqueue(tick(i));
    await expect.poll(() => rx.messages.length).toBe(5);
    expect(rx.bodies.length).toBeLessThan(5);
    expect(rx.invalid).toEqual([]);
  });

  it("keeps messages while the router is down and delivers them when it is back", async () => {
    const r = make();
    await rx.down();
    r.enqueue(tick(1));
    r.enqueue(tick(2));
    await expect.poll(() => r.stats.failures).toBeGreaterThan(1);
    expect(r.pending).toBe(2);
    await rx.up();
    await expect.poll(() => rx.messages.map((m) => m.at)).toEqual([1, 2]);
    // The receiver has the body before the reporter read the answer and settled.
    await expect.poll(() => r.pending).toBe(0);
  });

  it("gives up on a hanging router after the timeout and retries", async () => {
    const r = make({ timeoutMs: 50 });
    rx.setMode("hang");
    r.enqueue(tick(7));
    await expect.poll(() => r.stats.failures).toBeGreaterThan(0);
    rx.setMode("ok");
    await expect.poll(() => rx.messages.map((m) => m.at)).toEqual([7]);
  });

  it("keeps reports while the token is missing or wrong, and delivers them once it matches", async () => {
    // The plugin started before serve wrote plugin.token: no token, then a wrong one, then the file appears.
    let token: string | null = null;
    const logs: string[] = [];
    // A generous timeout: under load a slow answer must not stand in for the 401 being tested.
    const r = make({ token: () => token, timeoutMs: 5000, log: (_level, code) => logs.push(code) });
    r.enqueue(tick(1));
    await expect.poll(() => logs.filter((c) => c === "progress_unauthorized").length).toBeGreaterThan(0);
    token = "wrong";
    await expect.poll(() => rx.bodies.some((b) => b.authorization === "Bearer wrong")).toBe(true);
    expect(r.pending).toBe(1);
    expect(rx.messages).toEqual([]);
    token = "tok";
    // The receiver keeps the message before its answer reaches the reporter: wait for the queue itself.
    await expect.poll(() => r.pending).toBe(0);
    expect(rx.messages.length).toBe(1);
    expect(r.stats.rejected).toBe(0);
  });

  it("drops a body the router rejects (400) and logs it: sending it again cannot change the answer", async () => {
    const logs: string[] = [];
    const r = make({ log: (_level, code) => logs.push(code) });
    rx.setMode({ status: 400 });
    r.enqueue(tick(1));
    await expect.poll(() => r.stats.rejected).toBe(1);
    expect(r.pending).toBe(0);
    expect(logs).toContain("progress_rejected");
  });

  it("retries on 503", async () => {
    const r = make();
    rx.setMode({ status: 503 });
    r.enqueue(tick(3));
    await expect.poll(() => r.stats.failures).toBeGreaterThan(0);
    rx.setMode("ok");
    await expect.poll(() => rx.messages.length).toBe(1);
  });

  it("keeps one heartbeat (the newest) and a bounded queue", async () => {
    const r = make({ queueSize: 3 });
    await rx.down();
    r.enqueue(beat(1));
    r.enqueue(tick(10));
    r.enqueue(beat(2));
    r.enqueue(tick(11));
    r.enqueue(tick(12));
    r.enqueue(beat(3));
    expect(r.pending).toBe(3);
    expect(r.stats.dropped).toBeGreaterThan(0);
    await rx.up();
    await expect.poll(() => r.pending, { timeout: 3000 }).toBe(0);
    const got = rx.messages.map((m) => `${m.type}:${m.at}`);
    expect(got).toEqual(["watchdog_tick:11", "watchdog_tick:12", "heartbeat:3"]);
  });

  it("enqueue never throws, even when fetch itself throws synchronously", () => {
    const r = make({
      fetch: () => {
        throw new Error("boom");
      },
    });
    expect(() => r.enqueue(tick(1))).not.toThrow();
  });
});

describe("Reporter answers (modes)", () => {
  const directive = { id: "d:abcd", action: "recover", session_id: "w", root_id: "r", report: "x" };
  const reporterWith = (answer: unknown, status = 200) =>
    new Reporter({
      url: "http://127.0.0.1:9",
      token: null,
      timeoutMs: 300,
      queueSize: 10,
      fetch: async () =>
        new Response(typeof answer === "string" ? answer : JSON.stringify(answer), { status }),
    });

  it("hands a valid answer's directives to onAnswer", async () => {
    const rep = reporterWith({ accepted: 1, duplicates: 0, directives: [directive] });
    const seen: unknown[] = [];
    rep.onAnswer = (a) => seen.push(...a.directives);
    rep.enqueue(tick(1));
    await rep.flush();
    expect(seen).toEqual([directive]);
    rep.close();
  });

  it("ignores invalid answers, a throwing handler and non-2xx answers", async () => {
    for (const [body, status] of [
      ["not json", 200],
      [{ accepted: 1, duplicates: 0, directives: [{ ...directive, extra: 1 }] }, 200],
      [{ accepted: 1, duplicates: 0, directives: [directive] }, 400],
    ] as const) {
      const rep = reporterWith(body, status);
      let calls = 0;
      rep.onAnswer = () => {
        calls++;
      };
      rep.enqueue(tick(1));
      await rep.flush();
      expect(calls).toBe(0);
      rep.close();
    }
    const boom = reporterWith({ accepted: 1, duplicates: 0, directives: [] });
    boom.onAnswer = () => {
      throw new Error("handler boom");
    };
    boom.enqueue(tick(1));
    await expect(boom.flush()).resolves.toBeUndefined();
    expect(boom.stats.sent).toBe(1);
    boom.close();
  });
});

describe("Reporter under the router's body limit", () => {
  it("splits a batch the router answers 413 and sends it all again; a big heartbeat goes in pieces", async () => {
    const rx = await startReceiver({ token: "tok", maxBytes: 4096 });
    const r = new Reporter({
      url: rx.url,
      token: () => "tok",
      timeoutMs: 500,
      queueSize: 500,
      retryMs: 20,
      maxBytes: 1 << 20,
    });
    try {
      // The reporter believes 1 MiB until the first body; /health says 4096.
      for (let i = 0; i < 60; i++) r.enqueue(tick(i));
      r.enqueue({
        ...beat(1),
        sessions: Array.from({ length: 80 }, (_, i) => heartbeatSession(`ses_${i}`)),
      });
      await expect.poll(() => r.pending, { timeout: 5000 }).toBe(0);
      expect(r.stats).toMatchObject({ rejected: 0, dropped: 0 });
      expect(r.maxBytes).toBe(4096);
      expect(rx.messages.filter((m) => m.type === "watchdog_tick")).toHaveLength(60);
      const hbSessions = rx.messages.flatMap((m) => (m.type === "heartbeat" ? m.sessions : []));
      expect(new Set(hbSessions.map((s) => s.session_id)).size).toBe(80);
      expect(rx.bodies.every((b) => Buffer.byteLength(b.raw) <= 4096)).toBe(true);
    } finally {
      r.close();
      await rx.close();
    }
  });

  it("learns a lower limit from a 413 (a proxy in front), then cuts every batch to it", async () => {
    const rx = await startReceiver({ token: "tok", maxBytes: 2048 });
    // Skip /health: a fetch that fails it, so only the 413 can teach the limit.
    const learnt = new Reporter({
      url: rx.url,
      token: "tok",
      timeoutMs: 500,
      queueSize: 500,
      retryMs: 20,
      fetch: (u, init) => (u.endsWith("/health") ? Promise.reject(new Error("no health")) : fetch(u, init)),
    });
    try {
      for (let i = 0; i < 40; i++) learnt.enqueue(tick(i));
      await expect.poll(() => learnt.pending, { timeout: 5000 }).toBe(0);
      expect(learnt.stats).toMatchObject({ rejected: 0, dropped: 0, sent: 40 });
      expect(learnt.maxBytes).toBe(2048);
    } finally {
      learnt.close();
      await rx.close();
    }
  });
});
