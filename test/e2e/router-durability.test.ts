// Kill -9 during writes: `stallguard serve` runs as a child process on a real
// SQLite file while four reporters post transitions concurrently; it is
// killed with SIGKILL mid-stream and restarted on the same file. Everything
// that was acknowledged (transitions, verdict counts, a tree refusal, a knob
// override) must be there after the restart, and the outage is on record
// (/api/events router_events), as is the next one after a clean stop.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Transition } from "../../shared/index.ts";
import { freePort } from "../helpers/free-port.ts";
import { signals, transition as wireTransition } from "../helpers/wire-fixtures.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ADMIN = "durability-admin-token";
const PLUGIN_TOKEN = "durability-plugin-token";

interface Child {
  proc: ChildProcess;
  url: string;
  output: () => string;
}

async function spawnServe(dir: string, db: string, config: string): Promise<Child> {
  const port = await freePort();
  const proc = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "router-ext/cli/main.ts",
      "serve",
      "--port",
      String(port),
      "--db",
      db,
      "--config",
      config,
    ],
    {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: dir,
        XDG_STATE_HOME: join(dir, "state"),
        XDG_DATA_HOME: join(dir, "data"),
        XDG_CONFIG_HOME: join(dir, "config"),
        STALLGUARD_ADMIN_TOKEN: ADMIN,
        STALLGUARD_TOKEN: PLUGIN_TOKEN,
      },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
  let out = "";
  proc.stdout?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  proc.stderr?.on("data", (b: Buffer) => {
    out += b.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start:\n${out}`)), 60_000);
    const check = () => {
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m?.[1]) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    proc.stdout?.on("data", check);
    proc.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}:\n${out}`));
    });
  });
  return { proc, url, output: () => out };
}

function transition(session: string, at: number): Transition {
  return wireTransition(session, "ses_root", "build", "ok", "stalling", at, {
    reason: "duplicates",
    signals: signals({
      calls: 20,
      turns: 8,
      turns_since_landed: 8,
      calls_since_landed: 20,
      usd_since_landed: 0.1,
      usd_total: 0.1,
      dup_share: 0.5,
      ndup_share: 0.5,
      context_tokens: 1000,
      max_context_tokens: 1000,
      novelty: 0.2,
    }),
    top_target: "read a.ts",
    top_target_count: 6,
  });
}

const stopChild = (c: Child | undefined) =>
  new Promise<void>((resolve) => {
    if (!c || c.proc.exitCode !== null || c.proc.signalCode !== null) return resolve();
    c.proc.once("exit", () => resolve());
    c.proc.kill("SIGKILL");
  });

describe("router durability", () => {
  let dir: string;
  let db: string;
  let config: string;
  let child: Child | undefined;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), "sg-router-kill-"));
    db = join(dir, "stallguard.db");
    config = join(dir, "local.yaml");
    writeFileSync(config, "watchdog:\n  enabled: false\nnotifications:\n  channels: []\n");
  });
  afterAll(async () => {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  });

  it("keeps every acknowledged write across kill -9", async () => {
    child = await spawnServe(dir, db, config);
    const auth = { authorization: `Bearer ${ADMIN}`, "content-type": "application/json" };
    const base = child.url;
    expect(
      (
        await fetch(`${base}/api/trees/ses_other/stop`, {
          method: "POST",
          headers: auth,
          body: '{"by":"ops"}',
        })
      ).status,
    ).toBe(200);
    const knob = await fetch(`${base}/api/knobs`, {
      method: "PUT",
      headers: auth,
      body: JSON.stringify({ path: "thresholds.top_warn", value: 9 }),
    });
    expect(knob.status).toBe(200);

    // Four reporters, batches of five; the kill lands while they are writing.
    const acked = new Set<string>();
    let killed = false;
    const reporter = async (k: number) => {
      for (let n = 0; !killed; n++) {
        const batch = Array.from({ length: 5 }, (_, i) =>
          transition(`ses_p${k}_${n}_${i}`, 1_700_000_000_000 + n),
        );
        try {
          const r = await fetch(`${base}/progress`, {
            method: "POST",
            headers: { "content-type": "application/json", authorization: `Bearer ${PLUGIN_TOKEN}` },
            body: JSON.stringify(batch),
          });
          if (r.status === 200) {
            const body = (await r.json()) as { accepted: number };
            expect(body.accepted).toBe(5);
            for (const t of batch) acked.add(t.session_id);
          }
        } catch {
          return; // the server is gone
        }
      }
    };
    const running = [0, 1, 2, 3].map(reporter);
    while (acked.size < 400) await new Promise((r) => setTimeout(r, 5));
    const proc = child.proc;
    const exited = new Promise((r) => proc.once("exit", r));
    const killedAt = Date.now();
    proc.kill("SIGKILL");
    await exited;
    killed = true;
    await Promise.all(running);
    expect(proc.signalCode).toBe("SIGKILL");

    const restartedAt = Date.now();
    child = await spawnServe(dir, db, config);
    const events = (await (await fetch(`${child.url}/api/events?limit=10000`, { headers: auth })).json()) as {
      events: Array<{ session_id: string }>;
      router_events: Array<{ kind: string; from: number; to: number; clean: boolean }>;
    };
    // The outage is on record: from the killed run's last alive mark (its start here) to this start.
    expect(events.router_events).toHaveLength(1);
    const down = events.router_events[0];
    expect(down).toMatchObject({ kind: "down", clean: false });
    expect(down?.from).toBeLessThanOrEqual(killedAt);
    expect(down?.to).toBeGreaterThanOrEqual(restartedAt);
    expect(child.output()).toMatch(/router was down from \S+ to \S+ \(\d+s, ended without stopping\)/);
    const stored = new Set(events.events.map((e) => e.session_id));
    const lost = [...acked].filter((s) => !stored.has(s));
    expect(lost).toEqual([]);

    const sessions = (await (await fetch(`${child.url}/api/sessions`, { headers: auth })).json()) as {
      sessions: Array<{ session_id: string; flags: number; worst: string }>;
    };
    for (const s of sessions.sessions.filter((x) => acked.has(x.session_id)))
      expect(s).toMatchObject({ flags: 1, worst: "stalling" });

    const trees = (await (await fetch(`${child.url}/api/trees`, { headers: auth })).json()) as {
      trees: Array<{ key: string; state: string; by: string }>;
    };
    expect(trees.trees.find((t) => t.key === "ses_other")).toMatchObject({ state: "stopped", by: "ops" });
    const knobs = (await (await fetch(`${child.url}/api/knobs`, { headers: auth })).json()) as {
      knobs: Array<{ path: string; value: unknown }>;
    };
    expect(knobs.knobs.find((k) => k.path === "thresholds.top_warn")?.value).toBe(9);

    // A clean stop (SIGTERM) and a start: the second outage begins at the stop itself.
    const stopping = child.proc;
    const stoppedAt = Date.now();
    const gone = new Promise((r) => stopping.once("exit", r));
    stopping.kill("SIGTERM");
    await gone;
    child = await spawnServe(dir, db, config);
    const again = (await (await fetch(`${child.url}/api/events`, { headers: auth })).json()) as {
      router_events: Array<{ from: number; to: number; clean: boolean }>;
    };
    expect(again.router_events).toHaveLength(2);
    expect(again.router_events[0]?.clean).toBe(true);
    expect(again.router_events[0]?.from).toBeGreaterThanOrEqual(stoppedAt);
    expect(child.output()).toMatch(/router was down from \S+ to \S+ \(\d+s, stopped\)/);
  });
});
