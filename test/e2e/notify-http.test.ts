// The HTTP channels end to end against local node:http receivers: body shapes
// (generic JSON, ntfy, Slack, PagerDuty Events v2), bearer tokens from env,
// missing secrets, a receiver that hangs and one that answers 500, and the
// per-channel admission knobs (rate limit, quiet window, min_severity,
// resolve_messages) driven by an injected clock.
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { createNotifier, type NotificationsConfig, type Notifier } from "../../router-ext/notify/index.ts";
import type { Alert } from "../../router-ext/notify/types.ts";
import { validateConfig } from "../../shared/index.ts";

interface Received {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: unknown;
}

interface Receiver {
  url: string;
  received: Received[];
  /** Requests that arrived, including ones never answered. */
  arrivals: number;
  close(): Promise<void>;
}

type Mode = "ok" | "fail" | "hang";

async function receiver(mode: Mode = "ok", status = 200): Promise<Receiver> {
  const received: Received[] = [];
  const r = { arrivals: 0 };
  const server: Server = createServer((req, res) => {
    r.arrivals++;
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (d: string) => {
      raw += d;
    });
    req.on("end", () => {
      received.push({
        method: req.method ?? "",
        path: req.url ?? "",
        headers: req.headers,
        body: raw ? JSON.parse(raw) : null,
      });
      if (mode === "hang") return;
      res.writeHead(mode === "fail" ? 500 : status, { "content-type": "application/json" });
      res.end(mode === "fail" ? '{"error":"boom"}' : '{"status":"success"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    received,
    get arrivals() {
      return r.arrivals;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function notifications(channels: unknown[], timeout = "5s"): NotificationsConfig {
  const r = validateConfig({ notifications: { timeout, channels } });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config.notifications;
}

const alert = (over: Partial<Alert> = {}): Alert => ({
  dedup_key: "ses_root",
  severity: "warning",
  state: "trigger",
  title: "stallguard: build is stalling",
  summary: "build session ses_root stalling: repeat_target; 14 turns and $0.42 since a change landed",
  details: "INCIDENT REPORT",
  source: "no-progress",
  at: 1_700_000_000_000,
  ...over,
});

const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

async function setup(mode: Mode = "ok", status = 200) {
  const r = await receiver(mode, status);
  cleanup.push(() => r.close());
  return r;
}

function notifier(config: NotificationsConfig, env: Record<string, string> = {}, now?: () => number) {
  const lines: string[] = [];
  const n: Notifier = createNotifier(config, {
    env,
    log: (l) => lines.push(l),
    now,
    retryDelayMs: 20,
    startupDiagnostics: false,
  });
  cleanup.push(() => n.close(200));
  return { n, lines };
}

describe("webhook bodies", () => {
  it("posts the generic JSON body with a bearer token read from env", async () => {
    const r = await setup();
    const { n } = notifier(
      notifications([{ name: "hook", type: "webhook", url_env: "HOOK_URL", token_env: "HOOK_TOKEN" }]),
      { HOOK_URL: r.url, HOOK_TOKEN: "tok-123" },
    );
    n.send(alert());
    await n.idle();
    expect(r.received).toHaveLength(1);
    expect(r.received[0]).toMatchObject({ method: "POST", path: "/hook" });
    expect(r.received[0]?.headers.authorization).toBe("Bearer tok-123");
    expect(r.received[0]?.headers["content-type"]).toBe("application/json");
    expect(r.received[0]?.body).toEqual({
      dedup_key: "ses_root",
      severity: "warning",
      state: "trigger",
      title: "stallguard: build is stalling",
      summary: alert().summary,
      details: "INCIDENT REPORT",
      source: "no-progress",
      at: 1_700_000_000_000,
    });
    expect(n.deliveries()[0]).toMatchObject({ channel: "hook", status: "sent", ok: true, attempts: 1 });
    expect(n.channels()[0]?.target).toBe("json webhook, url from $HOOK_URL, token from $HOOK_TOKEN");
  });

  it("posts ntfy's JSON publish body and a Slack-compatible {text}", async () => {
    const ntfy = await setup();
    const slack = await setup();
    const { n } = notifier(
      notifications([
        { name: "ntfy", type: "webhook", format: "ntfy", url: ntfy.url, topic: "stallguard-alerts" },
        { name: "slack", type: "webhook", format: "slack", url_env: "SLACK_URL" },
      ]),
      { SLACK_URL: slack.url },
    );
    n.send(alert({ severity: "critical", state: "trigger", title: "stallguard: build is looping" }));
    await n.idle();
    expect(ntfy.received[0]?.body).toEqual({
      topic: "stallguard-alerts",
      title: "stallguard: build is looping",
      message: `${alert().summary}\n\nINCIDENT REPORT`,
      priority: 5,
      tags: ["rotating_light", "no-progress"],
    });
    expect(slack.received[0]?.body).toEqual({
      text: `*stallguard: build is looping*\n${alert().summary}\n\`\`\`INCIDENT REPORT\`\`\``,
    });
    expect(ntfy.received[0]?.headers.authorization).toBeUndefined();
  });

  it("posts PagerDuty Events v2 trigger and resolve with the routing key from env", async () => {
    const pd = await setup("ok", 202);
    const { n } = notifier(
      notifications([{ name: "pd", type: "pagerduty", routing_key_env: "PD_KEY", events_url: pd.url }]),
      { PD_KEY: "R0UTINGKEY" },
    );
    n.send(alert({ severity: "warning" })); // below the pagerduty default min_severity (critical)
    n.send(alert({ severity: "critical", state: "escalate", title: "stallguard: build is looping" }));
    n.send(alert({ severity: "critical", state: "resolve", title: "stallguard: build recovered" }));
    await n.idle();
    expect(pd.received.map((x) => x.body)).toEqual([
      {
        routing_key: "R0UTINGKEY",
        event_action: "trigger",
        dedup_key: "ses_root",
        payload: {
          summary: `stallguard: build is looping: ${alert().summary}`,
          source: "stallguard/no-progress",
          severity: "critical",
          timestamp: "2023-11-14T22:13:20.000Z",
          custom_details: {
            title: "stallguard: build is looping",
            summary: alert().summary,
            state: "trigger",
            details: "INCIDENT REPORT",
          },
        },
      },
      { routing_key: "R0UTINGKEY", event_action: "resolve", dedup_key: "ses_root" },
    ]);
    expect(n.channels()[0]?.counters).toMatchObject({ sent: 2, filtered: 1, failed: 0 });
  });

  it("fails a delivery with an error naming the missing variable, never a value", async () => {
    const r = await setup();
    const { n, lines } = notifier(
      notifications([
        { name: "pd", type: "pagerduty", routing_key_env: "PD_KEY", events_url: r.url },
        { name: "hook", type: "webhook", url: r.url, token_env: "HOOK_TOKEN" },
      ]),
      { UNRELATED: "x" },
    );
    n.send(alert({ severity: "critical" }));
    await n.idle();
    expect(r.arrivals).toBe(0);
    const byChannel = Object.fromEntries(n.deliveries().map((d) => [d.channel, d]));
    expect(byChannel.pd).toMatchObject({
      ok: false,
      attempts: 2,
      error: "environment variable PD_KEY is not set",
    });
    expect(byChannel.hook?.error).toBe("environment variable HOOK_TOKEN is not set");
    expect(lines.join("\n")).toContain("environment variable PD_KEY is not set");
    const diag = await n.diagnostics();
    expect(diag.map((d) => d.problems)).toEqual([
      ["environment variable PD_KEY is not set"],
      ["environment variable HOOK_TOKEN is not set"],
    ]);
  });
});

describe("delivery failures", () => {
  it("times out on a receiver that hangs, retries once, logs the failure; send() returned at once", async () => {
    const r = await setup("hang");
    const { n, lines } = notifier(notifications([{ name: "hook", type: "webhook", url: r.url }], "300ms"));
    const returned = n.send(alert());
    // send() handed the work to the queue: nothing has reached the receiver yet.
    expect(returned).toBeUndefined();
    expect(r.arrivals).toBe(0);
    expect(n.deliveries()).toEqual([]);
    await n.idle();
    expect(r.arrivals).toBe(2);
    expect(n.deliveries()[0]).toMatchObject({
      channel: "hook",
      status: "failed",
      ok: false,
      attempts: 2,
      error: "timed out after 300 ms",
    });
    expect(lines).toContainEqual(
      "notify: channel hook: trigger for ses_root failed after 2 attempt(s): timed out after 300 ms",
    );
  });

  it("a hanging channel does not hold up another channel", async () => {
    const hang = await setup("hang");
    const ok = await setup();
    const { n } = notifier(
      notifications(
        [
          { name: "slow", type: "webhook", url: hang.url },
          { name: "fast", type: "webhook", url: ok.url },
        ],
        "2s",
      ),
    );
    n.send(alert());
    await expect.poll(() => ok.received.length).toBe(1);
    expect(n.deliveries().map((d) => d.channel)).toEqual(["fast"]);
    expect(hang.arrivals).toBe(1);
  });

  it("retries once on HTTP 500, then records the failure", async () => {
    const r = await setup("fail");
    const { n } = notifier(notifications([{ name: "hook", type: "webhook", url: r.url }]));
    n.send(alert());
    await n.idle();
    expect(r.received).toHaveLength(2);
    expect(n.deliveries()).toEqual([
      expect.objectContaining({ status: "failed", attempts: 2, error: "HTTP 500 Internal Server Error" }),
    ]);
    expect(n.channels()[0]?.counters).toMatchObject({ sent: 0, failed: 1 });
  });

  it("test() reports a failing channel with its error", async () => {
    const r = await setup("fail");
    const { n } = notifier(notifications([{ name: "hook", type: "webhook", url: r.url }]));
    const d = await n.test("hook");
    expect(d).toMatchObject({
      ok: false,
      attempts: 2,
      source: "test",
      error: "HTTP 500 Internal Server Error",
    });
    expect(r.received.map((x) => (x.body as Alert).source)).toEqual(["test", "test"]);
  });

  it("drops and records alerts beyond the queue bound", async () => {
    const r = await setup("hang");
    const config = notifications([{ name: "hook", type: "webhook", url: r.url, quiet_window: 0 }], "300ms");
    const { n } = notifier({ ...config, queue_size: 2 });
    for (const key of ["a", "b", "c"]) n.send(alert({ dedup_key: key }));
    expect(n.deliveries()).toEqual([
      expect.objectContaining({
        dedup_key: "c",
        status: "dropped",
        attempts: 0,
        error: "delivery queue full",
      }),
    ]);
    await n.idle();
    expect(n.channels()[0]?.counters).toMatchObject({ queue_dropped: 1, failed: 2 });
  });
});

describe("admission knobs", () => {
  it("rate limit: at most count per window, the rest dropped and counted", async () => {
    const r = await setup();
    let t = 0;
    const { n } = notifier(
      notifications([
        { name: "hook", type: "webhook", url: r.url, rate_limit: { count: 2, per: "1h" }, quiet_window: 0 },
      ]),
      {},
      () => t,
    );
    for (const key of ["a", "b", "c", "d"]) n.send(alert({ dedup_key: key }));
    t = 60 * 60_000; // the first two leave the window
    n.send(alert({ dedup_key: "e" }));
    await n.idle();
    expect(r.received.map((x) => (x.body as Alert).dedup_key)).toEqual(["a", "b", "e"]);
    expect(n.channels()[0]?.counters).toMatchObject({ sent: 3, rate_limited: 2 });
  });

  it("quiet window: a non-critical repeat for the same tree waits; critical passes", async () => {
    const r = await setup();
    let t = 0;
    const { n } = notifier(
      notifications([{ name: "hook", type: "webhook", url: r.url, quiet_window: "10m" }]),
      {},
      () => t,
    );
    n.send(alert());
    t = 5 * 60_000;
    n.send(alert({ title: "stallguard: again" }));
    n.send(alert({ severity: "critical", state: "escalate", title: "stallguard: build is looping" }));
    t = 21 * 60_000;
    n.send(alert({ title: "stallguard: later" }));
    await n.idle();
    expect(r.received.map((x) => (x.body as Alert).title)).toEqual([
      "stallguard: build is stalling",
      "stallguard: build is looping",
      "stallguard: later",
    ]);
    expect(n.channels()[0]?.counters.suppressed).toBe(1);
  });

  it("min_severity per channel, changeable at runtime", async () => {
    const r = await setup();
    const { n } = notifier(
      notifications([
        { name: "hook", type: "webhook", url: r.url, min_severity: "critical", quiet_window: 0 },
      ]),
    );
    n.send(alert({ dedup_key: "a", severity: "warning" }));
    n.send(alert({ dedup_key: "b", severity: "critical" }));
    n.send(alert({ dedup_key: "c", severity: "info" }));
    expect(n.setChannel("hook", { min_severity: "info" })?.min_severity).toBe("info");
    n.send(alert({ dedup_key: "d", severity: "info" }));
    n.setChannel("hook", { enabled: false });
    n.send(alert({ dedup_key: "e", severity: "critical" }));
    expect(n.setChannel("nope", { enabled: true })).toBeNull();
    await n.idle();
    expect(r.received.map((x) => (x.body as Alert).dedup_key)).toEqual(["b", "d"]);
    expect(n.channels()[0]?.counters).toMatchObject({ sent: 2, filtered: 3 });
  });

  it("resolve_messages false skips the recovered message; true sends it", async () => {
    const off = await setup();
    const on = await setup();
    const { n } = notifier(
      notifications([
        { name: "off", type: "webhook", url: off.url, resolve_messages: false },
        { name: "on", type: "webhook", url: on.url },
      ]),
    );
    n.send(alert());
    n.send(alert({ state: "resolve", title: "stallguard: build recovered" }));
    await n.idle();
    expect(off.received.map((x) => (x.body as Alert).state)).toEqual(["trigger"]);
    expect(on.received.map((x) => (x.body as Alert).state)).toEqual(["trigger", "resolve"]);
  });

  it("rejects a malformed alert without throwing", async () => {
    const r = await setup();
    const { n, lines } = notifier(notifications([{ name: "hook", type: "webhook", url: r.url }]));
    expect(() => n.send({ ...alert(), summary: "two\nlines" })).not.toThrow();
    expect(() => n.send(null as unknown as Alert)).not.toThrow();
    await n.idle();
    expect(r.arrivals).toBe(0);
    expect(lines[0]).toBe("notify: alert rejected: summary: one line");
  });
});
