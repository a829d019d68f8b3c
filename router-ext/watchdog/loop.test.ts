import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, test } from "vitest";
import { parseConfig } from "../../shared/index.ts";
import { loadWatchdogConfig, serverFlags } from "../cli/watchdog.ts";
import { startWatchdogLoop, timerInstalled, userUnitDir } from "./loop.ts";
import type { WatchdogTickResult } from "./tick.ts";

const tmp = mkdtempSync(join(tmpdir(), "stallguard-wd-loop-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe("in-process loop", () => {
  test("ticks on the interval, reports each result, and stop() waits for the running tick", async () => {
    let posts = 0;
    const router = createServer((req, res) => {
      req.resume();
      req.on("end", () => {
        posts++;
        res.writeHead(200, { "content-type": "application/json" }).end('{"accepted":1,"duplicates":0}');
      });
    });
    await new Promise<void>((r) => router.listen(0, "127.0.0.1", r));
    const parsed = parseConfig([{ source: "t", value: { watchdog: { interval: "1s", timeout: "1s" } } }]);
    if (!parsed.ok) throw new Error("config");
    const results: WatchdogTickResult[] = [];
    // The loop's timer, driven by hand: each pending run is fired by the test, no sleeping.
    const timers: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
    const live = () => timers.filter((t) => !t.cancelled);
    const fire = () => {
      const t = live().at(-1);
      if (!t) throw new Error("nothing scheduled");
      t.cancelled = true;
      t.fn();
    };
    const loop = startWatchdogLoop({
      config: parsed.config,
      servers: ["http://127.0.0.1:1"],
      routerUrl: `http://127.0.0.1:${(router.address() as AddressInfo).port}`,
      statePath: join(tmp, "loop", "watchdog.json"),
      env: { HOME: tmp, XDG_DATA_HOME: join(tmp, "none") },
      log: () => undefined,
      onTick: (r) => results.push(r),
      schedule: (fn, ms) => {
        const t = { fn, ms, cancelled: false };
        timers.push(t);
        return { cancel: () => (t.cancelled = true) };
      },
    });
    expect(timers.map((t) => t.ms)).toEqual([0]); // the first tick at once
    fire();
    await expect.poll(() => results.length).toBe(1);
    expect(live().map((t) => t.ms)).toEqual([1000]); // the next one interval after the last finished
    fire(); // a tick is running while stop() is called: stop waits for it
    const stopping = loop.stop();
    expect(results).toHaveLength(1);
    await stopping;
    const after = results.length;
    await new Promise<void>((r) => router.close(() => r()));
    expect(live()).toEqual([]); // nothing is scheduled after stop()
    expect(after).toBeGreaterThanOrEqual(2);
    expect(results.length).toBe(after); // nothing ran after stop()
    expect(results.every((r) => !r.blind && r.servers === 0 && !r.skipped)).toBe(true);
    expect(posts).toBe(after); // each tick recorded itself with the router (watchdog_tick)
  });
});

describe("timer detection", () => {
  test("user unit dir follows XDG_CONFIG_HOME", async () => {
    expect(userUnitDir({ XDG_CONFIG_HOME: "/c", HOME: "/h" })).toBe("/c/systemd/user");
    expect(userUnitDir({ HOME: "/h" })).toBe("/h/.config/systemd/user");
  });

  test("falls back to the unit file when systemctl does not know the unit", async () => {
    const dir = join(tmp, "units");
    expect(timerInstalled({ dir, env: { ...process.env, HOME: tmp } })).toBe(false);
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "stallguard-watchdog.timer"), "[Timer]\nOnUnitActiveSec=5min\n");
    expect(timerInstalled({ dir, systemctl: false })).toBe(true);
  });
});

describe("watchdog CLI helpers", () => {
  test("every --server flag is kept, in both spellings", async () => {
    expect(serverFlags(["--once", "--server", "http://a:1", "--server=http://b:2", "--router", "x"])).toEqual(
      ["http://a:1", "http://b:2"],
    );
  });

  test("--config layers over the defaults; a bad file names its path", async () => {
    const good = join(tmp, "good.yaml");
    writeFileSync(good, "watchdog:\n  interval: 2m\n  servers: ['http://127.0.0.1:4096']\n");
    const noDb = { dbPath: null };
    const r = await loadWatchdogConfig(good, noDb);
    expect(r.ok && r.config.watchdog.interval).toBe(120_000);
    expect(r.ok && r.config.watchdog.servers).toEqual(["http://127.0.0.1:4096"]);
    const bad = join(tmp, "bad.yaml");
    writeFileSync(bad, "watchdog:\n  intervall: 2m\n");
    const b = await loadWatchdogConfig(bad, noDb);
    expect(b.ok).toBe(false);
    expect(!b.ok && b.error).toContain("watchdog.intervall");
    expect((await loadWatchdogConfig(join(tmp, "missing.yaml"), noDb)).ok).toBe(false);
  });

  test("admin overrides stored in the router's database reach the timer's ticks", async () => {
    const { openSqliteStore } = await import("../store/sqlite-store.ts");
    const dbPath = join(tmp, "db", "stallguard.db");
    const store = await openSqliteStore(dbPath);
    await store.setKnobOverride("watchdog.local_llm_enabled", false, "test", 1);
    await store.setKnobOverride("thresholds.top_warn", 9, "test", 1);
    await store.setKnobOverride("watchdog.servers", ["http://attacker.example:4096"], "test", 1);
    await store.close();
    const r = await loadWatchdogConfig(undefined, { dbPath });
    expect(r.ok && r.config.watchdog.local_llm_enabled).toBe(false);
    expect(r.ok && r.config.thresholds.top_warn).toBe(9);
    // The admin page's servers are watched, but are not among the servers the files name.
    expect(r.ok && r.config.watchdog.servers).toEqual(["http://attacker.example:4096"]);
    expect(r.ok && r.fileServers).toEqual([]);
    const none = await loadWatchdogConfig(undefined, { dbPath: join(tmp, "db", "absent.db") });
    expect(none.ok && none.config.watchdog.local_llm_enabled).toBe(true);
  });
});
