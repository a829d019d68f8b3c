import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { notifyCritical, sessionBusEnv } from "./desktop.ts";

const tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-desktop-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("router-down desktop alert plumbing", () => {
  test("keeps a given bus address; else falls back to $XDG_RUNTIME_DIR/bus when it exists", () => {
    expect(sessionBusEnv({ DBUS_SESSION_BUS_ADDRESS: "unix:path=/x" }).DBUS_SESSION_BUS_ADDRESS).toBe(
      "unix:path=/x",
    );
    expect(sessionBusEnv({ XDG_RUNTIME_DIR: tmp }).DBUS_SESSION_BUS_ADDRESS).toBeUndefined();
    writeFileSync(join(tmp, "bus"), "");
    expect(sessionBusEnv({ XDG_RUNTIME_DIR: tmp }).DBUS_SESSION_BUS_ADDRESS).toBe(`unix:path=${tmp}/bus`);
  });

  test("no bus at all: a clear failure, no spawn", async () => {
    const r = await notifyCritical("s", "b", { env: { XDG_RUNTIME_DIR: join(tmp, "none") } });
    expect(r).toEqual({ ok: false, detail: "DBUS_SESSION_BUS_ADDRESS is not set and no session bus socket" });
  });

  test("a failing or missing notifier is reported, never thrown", async () => {
    const env = { DBUS_SESSION_BUS_ADDRESS: "unix:path=/nonexistent", PATH: process.env.PATH };
    const failing = await notifyCritical("s", "b", { env, command: "false" });
    expect(failing.ok).toBe(false);
    expect(failing.detail).toContain("exit 1");
    const missing = await notifyCritical("s", "b", { env, command: join(tmp, "no-such-binary") });
    expect(missing.ok).toBe(false);
    expect(missing.detail).toContain("notify-send failed");
  });
});
