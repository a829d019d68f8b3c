// The desktop channel end to end: the real notify-send against a private
// session bus with python3-dbusmock's notification daemon, and the startup
// diagnostics against a missing address, a missing socket and a dead one.
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNotifier, type NotificationsConfig } from "../../router-ext/notify/index.ts";
import type { Alert } from "../../router-ext/notify/types.ts";
import { type ChannelConfig, validateConfig } from "../../shared/index.ts";
import { desktopToolsMissing, type SessionBus, startSessionBus } from "../helpers/dbus.ts";

const missing = desktopToolsMissing();
if (missing) console.warn(`notify-desktop: skipped, ${missing}`);

function notifications(channels: unknown[]): NotificationsConfig {
  const r = validateConfig({ notifications: { timeout: "3s", channels } });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config.notifications;
}

const desktop = (over: Partial<ChannelConfig> = {}) => ({
  name: "desktop",
  type: "desktop",
  app_name: "stallguard-test",
  min_severity: "info",
  ...over,
});

const alert = (over: Partial<Alert>): Alert => ({
  dedup_key: "ses_root",
  severity: "critical",
  state: "trigger",
  title: "stallguard: build is looping",
  summary: "build session ses_root looping: repeat_target; 14 turns and $0.42 since a change landed",
  details: "report",
  source: "no-progress",
  at: 1,
  ...over,
});

describe.skipIf(missing !== null)("desktop channel on a real session bus", () => {
  let bus: SessionBus;
  let dir: string;
  beforeAll(async () => {
    bus = await startSessionBus();
    dir = mkdtempSync(join(tmpdir(), "stallguard-notify-"));
  });
  afterAll(async () => {
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("delivers critical alerts with urgency 2 and others with urgency 1", async () => {
    const lines: string[] = [];
    const n = createNotifier(notifications([desktop()]), { env: bus.env, log: (l) => lines.push(l) });
    n.send(alert({}));
    n.send(alert({ dedup_key: "ses_other", severity: "warning", title: "stallguard: plan is stalling" }));
    await n.idle();
    const critical = await bus.waitFor((x) => x.summary === "stallguard: build is looping");
    expect(critical).toMatchObject({ app: "stallguard-test", urgency: 2, body: alert({}).summary });
    const warning = await bus.waitFor((x) => x.summary === "stallguard: plan is stalling");
    expect(warning.urgency).toBe(1);
    expect(n.deliveries().map((d) => [d.dedup_key, d.status, d.attempts])).toEqual([
      ["ses_other", "sent", 1],
      ["ses_root", "sent", 1],
    ]);
    const [diag] = await n.diagnostics();
    expect(diag).toMatchObject({ channel: "desktop", ok: true, problems: [] });
    await n.close();
    expect(lines.join("\n")).toContain("channel desktop (desktop): ready");
  });

  it("sends a test alert through the channel on demand", async () => {
    const n = createNotifier(notifications([desktop({ min_severity: "warning" })]), {
      env: bus.env,
      log: () => {},
    });
    const d = await n.test("desktop");
    expect(d).toMatchObject({ ok: true, status: "sent", source: "test", attempts: 1 });
    const got = await bus.waitFor((x) => x.summary === "stallguard: test alert");
    expect(got.urgency).toBe(1);
    expect(await n.test("nope")).toBeNull();
    await n.close();
  });

  it("says clearly when DBUS_SESSION_BUS_ADDRESS is missing, and logs it at startup", async () => {
    const env = { ...bus.env };
    delete env.DBUS_SESSION_BUS_ADDRESS;
    const lines: string[] = [];
    const n = createNotifier(notifications([desktop()]), { env, log: (l) => lines.push(l) });
    const [diag] = await n.diagnostics();
    expect(diag?.ok).toBe(false);
    expect(diag?.problems).toEqual([expect.stringContaining("DBUS_SESSION_BUS_ADDRESS is not set")]);
    await expect.poll(() => lines.join("\n")).toContain("DBUS_SESSION_BUS_ADDRESS is not set");
    await n.close();
  });

  it("says clearly when the bus socket does not exist or nobody listens on it", async () => {
    const gone = join(dir, "no-such-bus");
    const stale = join(dir, "stale-bus");
    // A socket file whose owner has exited: connect() gets ECONNREFUSED.
    execFileSync("/usr/bin/python3", [
      "-c",
      "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])",
      stale,
    ]);
    const problems = async (address: string) => {
      const n = createNotifier(notifications([desktop()]), {
        env: { ...bus.env, DBUS_SESSION_BUS_ADDRESS: address },
        log: () => {},
        startupDiagnostics: false,
      });
      const [diag] = await n.diagnostics();
      await n.close();
      return diag?.problems ?? [];
    };
    expect(await problems(`unix:path=${gone}`)).toEqual([
      expect.stringMatching(new RegExp(`socket ${gone} .*does not exist`)),
    ]);
    expect(await problems(`unix:path=${stale},guid=0123`)).toEqual([
      expect.stringMatching(new RegExp(`nothing listens on the session bus socket ${stale}`)),
    ]);
    expect(await problems(bus.address)).toEqual([]);
  });

  it("records and logs a failed delivery when the bus is gone (after one retry)", async () => {
    const lines: string[] = [];
    const n = createNotifier(notifications([desktop()]), {
      env: { ...bus.env, DBUS_SESSION_BUS_ADDRESS: `unix:path=${join(dir, "no-such-bus")}` },
      log: (l) => lines.push(l),
      retryDelayMs: 10,
      startupDiagnostics: false,
    });
    n.send(alert({ dedup_key: "ses_lost", title: "stallguard: lost bus" }));
    await n.idle();
    const [d] = n.deliveries();
    expect(d).toMatchObject({ dedup_key: "ses_lost", status: "failed", ok: false, attempts: 2 });
    expect(d?.error).toMatch(/notify-send exited with code 1/);
    expect(lines.join("\n")).toMatch(/channel desktop: trigger for ses_lost failed after 2 attempt/);
    expect(bus.notifications().some((x) => x.summary === "stallguard: lost bus")).toBe(false);
    await n.close();
  });
});
