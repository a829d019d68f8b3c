// The doctor's judgement on facts, one link at a time: what a mode needs
// decides the exit status; each failure names its fix.
import { describe, expect, it } from "vitest";
import { type CheckResult, exitCode, runChecks } from "./checks.ts";
import type { DoctorFacts } from "./facts.ts";

const NOW = 1_800_000_000_000;
const HOME = "/home/u";
const ROUTER = "http://127.0.0.1:4870";

function facts(over: Partial<DoctorFacts> = {}): DoctorFacts {
  return {
    now: NOW,
    mode: "auto_recover",
    routerUrl: ROUTER,
    expectedVersion: "0.2.0",
    opencode: { path: "/usr/bin/opencode", version: "1.18.33", error: null },
    pluginDirs: [`${HOME}/.config/opencode/plugins`, "/p/.opencode/plugins"],
    plugins: [{ scope: "global", path: `${HOME}/.config/opencode/plugins/stallguard.js`, version: "0.2.0" }],
    opencodeConfig: {
      files: [
        {
          path: "/p/opencode.json",
          value: {
            model: "sg/m",
            provider: {
              sg: {
                options: {
                  baseURL: "http://localhost:4870/v1/",
                  apiKey: "{file:~/.config/stallguard/client.key}",
                },
              },
            },
          },
        },
      ],
      env: {},
      fileRefs: { [`${HOME}/.config/stallguard/client.key`]: "readable" },
      home: HOME,
    },
    router: {
      ok: true,
      health: {
        ok: true,
        version: "0.2.0",
        db: "ok",
        schema_version: 155,
        mode: "auto_recover",
        watchdog: { last_tick_at: NOW - 60_000, blind: false, flagged: 0, servers: 1 },
        plugins_live: 1,
        db_writable: true,
      },
    },
    secrets: ["plugin.token", "admin.token", "client.key"].map((file) => ({
      file,
      path: `${HOME}/.config/stallguard/${file}`,
      env: "X",
      envSet: false,
      state: "readable" as const,
      mode: 0o600,
    })),
    upstream: null,
    desktop: { enabled: true, problems: [] },
    units: {
      dir: `${HOME}/.config/systemd/user`,
      installed: ["stallguard.service", "stallguard-watchdog.service", "stallguard-watchdog.timer"],
      missing: [],
      active: { "stallguard.service": "active", "stallguard-watchdog.timer": "active" },
    },
    watchdog: { enabled: true, intervalMs: 300_000 },
    ...over,
  };
}

const byId = (f: DoctorFacts) =>
  Object.fromEntries(runChecks(f).map((r) => [r.id, r])) as Record<string, CheckResult>;
const provider = (value: unknown, env: Record<string, string | undefined> = {}) =>
  byId(
    facts({
      opencodeConfig: { ...facts().opencodeConfig, files: [{ path: "/p/opencode.json", value }], env },
    }),
  ).provider;

describe("doctor checks", () => {
  it("a good install passes every check (localhost and a trailing slash are the gate too)", () => {
    const results = runChecks(facts());
    expect(results.filter((r) => r.status !== "pass")).toEqual([
      { id: "upstream", status: "skip", needed: false, detail: expect.any(String), fix: null },
    ]);
    expect(exitCode(results)).toBe(0);
  });

  it("the mode decides: a broken provider fails auto_recover, warn can do without it", () => {
    const broken = {
      model: "other/m",
      provider: { other: { options: { baseURL: "https://api.example/v1" } } },
    };
    const files = [{ path: "/p/opencode.json", value: broken }];
    const recover = facts({ opencodeConfig: { ...facts().opencodeConfig, files } });
    expect(byId(recover).provider).toMatchObject({ status: "fail", needed: true });
    expect(exitCode(runChecks(recover))).toBe(1);
    const warn = { ...recover, mode: "warn" as const };
    expect(byId(warn).provider).toMatchObject({ status: "fail", needed: false });
    expect(exitCode(runChecks(warn))).toBe(0);
  });

  it("provider: the model must go through it; the key's three forms; unreadable config", () => {
    const gate = (apiKey?: string, model = "sg/m") => ({
      model,
      provider: { sg: { options: { baseURL: `${ROUTER}/v1`, ...(apiKey === undefined ? {} : { apiKey }) } } },
    });
    expect(provider(gate("k", "openai/gpt"))?.detail).toMatch(
      /"model" is openai\/gpt, which does not go through it/,
    );
    expect(provider(gate())?.detail).toMatch(/has no apiKey$/);
    expect(provider(gate("{env:SG_KEY}"))?.detail).toMatch(/reads \{env:SG_KEY\}, which is not set here/);
    expect(provider(gate("{env:SG_KEY}"), { SG_KEY: "x" })).toMatchObject({ status: "pass" });
    expect(provider(gate("sk-literal"))).toMatchObject({
      status: "pass",
      detail: expect.stringMatching(/a literal key$/),
    });
    expect(provider(gate("{file:keys/gate.key}"))?.detail).toMatch(
      /apiKey file \/p\/keys\/gate\.key is missing/,
    );
    const unreadable = byId(
      facts({
        opencodeConfig: {
          ...facts().opencodeConfig,
          files: [{ path: "/p/opencode.json", error: "Unexpected token" }],
        },
      }),
    ).provider;
    expect(unreadable).toMatchObject({
      status: "fail",
      detail: "cannot read /p/opencode.json: Unexpected token",
    });
  });

  it("plugin: none, two copies, another version", () => {
    expect(byId(facts({ plugins: [] })).plugin?.detail).toMatch(/^no stallguard plugin in /);
    const two = facts({
      plugins: [
        { scope: "global", path: "/g/stallguard.js", version: "0.2.0" },
        { scope: "project", path: "/p/stallguard.js", version: "0.2.0" },
      ],
    });
    expect(byId(two).plugin).toMatchObject({
      status: "fail",
      fix: "keep one: remove the others, then restart opencode",
    });
    const old = facts({ plugins: [{ scope: "project", path: "/p/stallguard.js", version: "0.1.0" }] });
    expect(byId(old).plugin?.detail).toBe(
      "plugin 0.1.0 at /p/stallguard.js (project), but the router is 0.2.0",
    );
  });

  it("router: down, database error, read-only database", () => {
    expect(byId(facts({ router: { ok: false, error: "ECONNREFUSED" } })).router?.detail).toBe(
      `router not reachable at ${ROUTER}: ECONNREFUSED`,
    );
    const h = (facts().router as { health: NonNullable<unknown> }).health as Extract<
      DoctorFacts["router"],
      { ok: true }
    >["health"];
    expect(
      byId(facts({ router: { ok: true, health: { ...h, db: "error: disk I/O" } } })).router?.detail,
    ).toMatch(/database: error: disk I\/O/);
    expect(
      byId(facts({ router: { ok: true, health: { ...h, db_writable: false } } })).router?.detail,
    ).toMatch(/does not take writes/);
  });

  it("secrets: from the environment, a file open to others, an unreadable file", () => {
    const s = facts().secrets;
    const r = byId(
      facts({
        secrets: [
          {
            ...(s[0] as (typeof s)[number]),
            envSet: true,
            state: "missing",
            mode: null,
            env: "STALLGUARD_TOKEN",
          },
          { ...(s[1] as (typeof s)[number]), mode: 0o644 },
          { ...(s[2] as (typeof s)[number]), state: "unreadable" },
        ],
      }),
    );
    expect(r["plugin.token"]).toMatchObject({
      status: "pass",
      detail: "plugin.token: from STALLGUARD_TOKEN",
    });
    expect(r["admin.token"]).toMatchObject({
      status: "fail",
      fix: `chmod 600 ${HOME}/.config/stallguard/admin.token`,
    });
    expect(r["admin.token"]?.detail).toMatch(/open to others \(mode 644\)/);
    expect(r["client.key"]?.detail).toMatch(/cannot be read$/);
  });

  it("upstream (asked for): unset, refusing the key, answering", () => {
    expect(byId(facts({ upstream: { url: null, ok: false, detail: "not set" } })).upstream?.detail).toMatch(
      /^server\.upstream is not set/,
    );
    expect(
      byId(facts({ upstream: { url: "https://u/v1", ok: false, detail: "GET /models answered 401" } }))
        .upstream,
    ).toMatchObject({
      status: "fail",
      needed: true,
    });
    expect(
      byId(facts({ upstream: { url: "https://u/v1", ok: true, detail: "GET /models answered 200" } }))
        .upstream?.status,
    ).toBe("pass");
  });

  it("D-Bus only matters with a desktop channel, and never fails a mode: a warning naming the key that turns it off", () => {
    expect(byId(facts({ desktop: { enabled: false, problems: ["no bus"] } })).dbus?.status).toBe("skip");
    for (const mode of ["warn", "auto_recover"] as const) {
      const f = facts({ mode, desktop: { enabled: true, problems: ["no bus"], channels: ["laptop"] } });
      expect(byId(f).dbus).toMatchObject({ status: "fail", needed: false, detail: "no bus" });
      expect(byId(f).dbus?.fix).toContain(
        "notifications.channels: [{ name: laptop, type: desktop, enabled: false }] (the key is notifications.channels[].enabled)",
      );
      expect(exitCode(runChecks(f))).toBe(0);
    }
  });

  it("plugin version when the router cannot say: compared with this stallguard, said as unknown", () => {
    const down = facts({ router: { ok: false, error: "ECONNREFUSED" }, packageVersion: "0.2.0" });
    expect(byId(down).plugin).toMatchObject({
      status: "pass",
      detail: `plugin 0.2.0 at ${HOME}/.config/opencode/plugins/stallguard.js (global), same as this stallguard 0.2.0 (the router's version is unknown: not reachable)`,
    });
    const older = facts({ ...down, packageVersion: "0.3.0" });
    expect(byId(older).plugin?.detail).toMatch(
      /, but this stallguard is 0\.3\.0 \(the router's version is unknown/,
    );
  });

  it("provider key: the router accepts it, refuses it (a fail), or could not be asked", () => {
    expect(byId(facts({ keyCheck: { state: "accepted", client: "default" } })).provider?.detail).toMatch(
      /key from \{file:~\/\.config\/stallguard\/client\.key\}, accepted by the router as client default$/,
    );
    const refused = byId(facts({ keyCheck: { state: "refused", status: 401 } })).provider;
    expect(refused).toMatchObject({
      status: "fail",
      needed: true,
      detail:
        "provider sg's apiKey ({file:~/.config/stallguard/client.key}) is not one of the gate's client keys: the router answered 401",
    });
    expect(refused?.fix).toMatch(/^set "apiKey": "\{file:~\/\.config\/stallguard\/client\.key\}"/);
    expect(byId(facts({ keyCheck: { state: "unchecked", why: "X is not set" } })).provider?.detail).toMatch(
      /, not checked against the router: X is not set$/,
    );
  });

  it("reporting: plugins that send headers but do not report fail the check, naming the URL they use", () => {
    const h = (facts().router as Extract<DoctorFacts["router"], { ok: true }>).health;
    const silent = {
      instance_id: "sg_1",
      version: "0.2.0",
      report_url: "http://127.0.0.1:4870",
      report_state: "failing",
      last_headers_at: NOW,
    };
    const r = byId(
      facts({ router: { ok: true, health: { ...h, plugins_headers_only: [silent] } } }),
    ).reporting;
    expect(r).toMatchObject({
      status: "fail",
      needed: true,
      detail: `1 plugin(s) send headers through the gate but do not report: they report to http://127.0.0.1:4870 (its deliveries fail), this router is ${ROUTER}`,
    });
    expect(r?.fix).toContain(`STALLGUARD_URL=${ROUTER}`);
    expect(byId(facts()).reporting).toMatchObject({
      status: "pass",
      detail: "1 plugin(s) report; no plugin sends headers without reporting",
    });
    expect(byId(facts({ router: { ok: false, error: "ECONNREFUSED" } })).reporting?.status).toBe("skip");
  });

  it("units: none (a warning), some missing, installed but inactive, systemctl silent", () => {
    const u = facts().units;
    expect(byId(facts({ units: { ...u, installed: [], active: null } })).units).toMatchObject({
      status: "fail",
      needed: false,
    });
    expect(byId(facts({ units: { ...u, missing: ["stallguard-watchdog.timer"] } })).units?.detail).toMatch(
      /^stallguard-watchdog\.timer missing/,
    );
    const inactive = byId(
      facts({
        units: { ...u, active: { "stallguard.service": "active", "stallguard-watchdog.timer": "inactive" } },
      }),
    ).units;
    expect(inactive).toMatchObject({
      status: "fail",
      needed: true,
      detail: "installed but not active: stallguard-watchdog.timer (inactive)",
    });
    expect(byId(facts({ units: { ...u, active: null } })).units).toMatchObject({
      status: "fail",
      needed: false,
    });
  });

  it("watchdog: off, no tick, late, blind while opencode runs, quiet when nothing runs", () => {
    const h = (facts().router as Extract<DoctorFacts["router"], { ok: true }>).health;
    const wd = (w: NonNullable<typeof h.watchdog> | null) =>
      byId(facts({ router: { ok: true, health: { ...h, watchdog: w } } })).watchdog;
    expect(byId(facts({ watchdog: { enabled: false, intervalMs: 300_000 } })).watchdog?.status).toBe("skip");
    expect(wd(null)?.detail).toBe("no watchdog tick recorded");
    expect(wd({ last_tick_at: NOW - 20 * 60_000, blind: false, flagged: 0, servers: 1 })?.detail).toBe(
      "last tick 20m ago (interval 5m)",
    );
    expect(wd({ last_tick_at: NOW - 1000, blind: true, flagged: 0, servers: 2 })?.detail).toBe(
      "blind: 2 opencode server(s) answered but their sessions could not be read",
    );
    // A watchdog older than the database source: blind with no server meant nothing ran.
    expect(wd({ last_tick_at: NOW - 1000, blind: true, flagged: 0, servers: 0 })).toMatchObject({
      status: "pass",
      detail: "last tick 1s ago, no opencode running",
    });
    // What the tick read from opencode.db, said as such; an unreadable file is blind.
    const tick = { last_tick_at: NOW - 1000, flagged: 0, servers: 0, sessions: 3 };
    expect(wd({ ...tick, blind: false, db: "read" })).toMatchObject({
      status: "pass",
      detail: "last tick 1s ago, read opencode.db: 3 session(s) judged",
    });
    expect(wd({ ...tick, sessions: 0, blind: false, db: "missing" })?.detail).toBe(
      "last tick 1s ago, no opencode database found, no opencode server answered",
    );
    expect(wd({ ...tick, sessions: 0, blind: true, db: "unreadable" })).toMatchObject({
      status: "fail",
      detail: "blind: opencode.db could not be read",
      fix: expect.stringContaining("opencode.db"),
    });
  });

  it("opencode: not found, or it would not say its version", () => {
    expect(byId(facts({ opencode: { path: null, version: null, error: null } })).opencode?.fix).toMatch(
      /npm install -g opencode-ai/,
    );
    expect(
      byId(facts({ opencode: { path: "/x/opencode", version: null, error: "exit 1" } })).opencode?.detail,
    ).toBe("/x/opencode did not say its version: exit 1");
  });
});
