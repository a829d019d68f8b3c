import { describe, expect, it } from "vitest";
import { checkPgStore } from "./pg-checks.ts";
import type { PgRunFact, PgStoreFact } from "./pg-facts.ts";

const NOW = 1_800_000_000_000;
const run = (seq: number, aliveAgoMs: number, stopped = false): PgRunFact => ({
  seq,
  pid: 100 + seq,
  version: "0.9.0",
  startedAt: NOW - 3_600_000,
  aliveAt: NOW - aliveAgoMs,
  stoppedAt: stopped ? NOW - aliveAgoMs : null,
});
const fact = (over: Partial<PgStoreFact> = {}): PgStoreFact => ({
  target: "postgres://stallguard@db.internal:5432/stallguard",
  address: "db.internal:5432",
  password: { kind: "file", path: "/etc/stallguard/pg.password" },
  connection: { ok: true },
  schema: { version: 301, newest: 301, pending: [] },
  runs: [run(1, 5_000), run(2, 12_000)],
  aliveMs: 15_000,
  ...over,
});
const byId = (f: PgStoreFact) => Object.fromEntries(checkPgStore(f, NOW).map((r) => [r.id, r]));
const label = (r: { status: string; needed: boolean } | undefined) =>
  r?.status === "fail" ? (r.needed ? "FAIL" : "warn") : r?.status;

describe("doctor's PostgreSQL checks", () => {
  it("none on SQLite (no PostgreSQL fact)", () => {
    expect(checkPgStore(undefined, NOW)).toEqual([]);
  });

  it("a healthy store: password from the file, connected, schema current, both replicas alive", () => {
    const r = byId(fact());
    expect(Object.keys(r)).toEqual(["pg.password", "postgres", "pg.schema", "replicas"]);
    expect(Object.values(r).every((c) => c.status === "pass")).toBe(true);
    expect(r["pg.password"]?.detail).toContain("STALLGUARD_PG_PASSWORD_FILE (/etc/stallguard/pg.password");
    expect(r.replicas?.detail).toMatch(/^2 alive: run 1 \(pid 101, 0\.9\.0\) alive 5s ago; run 2/);
  });

  it("says which source the password comes from, and warns when none is set", () => {
    expect(byId(fact({ password: { kind: "env" } }))["pg.password"]?.detail).toBe(
      "from STALLGUARD_PG_PASSWORD",
    );
    expect(label(byId(fact({ password: { kind: "none" } }))["pg.password"])).toBe("warn");
    const bad = byId(fact({ password: { kind: "bad", problem: "STALLGUARD_PG_PASSWORD_FILE: mode 644" } }));
    expect(label(bad["pg.password"])).toBe("FAIL");
    expect(bad["pg.password"]?.detail).toContain("mode 644");
  });

  it("a refused connection names host:port and the error code, and the rest are skipped", () => {
    const r = byId(
      fact({
        connection: { ok: false, code: "ECONNREFUSED", problem: "nothing accepts connections there" },
        schema: null,
        runs: null,
      }),
    );
    expect(label(r.postgres)).toBe("FAIL");
    expect(r.postgres?.detail).toBe(
      "cannot connect to db.internal:5432 (postgres://stallguard@db.internal:5432/stallguard): nothing accepts connections there [ECONNREFUSED]",
    );
    expect(r["pg.schema"]?.status).toBe("skip");
    expect(r.replicas?.status).toBe("skip");
  });

  it("an older schema is a warning (serve migrates); a newer one is a failure (upgrade)", () => {
    const older = byId(fact({ schema: { version: 251, newest: 301, pending: [253, 301] } }))["pg.schema"];
    expect(label(older)).toBe("warn");
    expect(older?.detail).toContain("serve will migrate on start");
    const newer = byId(fact({ schema: { version: 303, newest: 301, pending: [] } }))["pg.schema"];
    expect(label(newer)).toBe("FAIL");
    expect(newer?.detail).toContain("this stallguard is older than the database: upgrade");
    // A feature migration below the highest, not applied yet (a database migrated before it shipped).
    const gap = byId(fact({ schema: { version: 301, newest: 301, pending: [203] } }))["pg.schema"];
    expect(label(gap)).toBe("warn");
    expect(gap?.detail).toBe(
      "schema version 301, but this build's migration(s) 203 not applied: serve will migrate on start",
    );
  });

  it("a replica is alive for 3 alive intervals; a stopped or silent run is not; none alive warns", () => {
    const r = byId(fact({ runs: [run(1, 44_000), run(2, 46_000), run(3, 1_000, true)] }));
    expect(r.replicas?.detail).toMatch(/^1 alive: run 1 /);
    const none = byId(fact({ runs: [run(4, 120_000), run(5, 60_000, true)] })).replicas;
    expect(label(none)).toBe("warn");
    expect(none?.detail).toBe(
      "no stallguard serve alive on this database; the last one (pid 105) was alive 60s ago",
    );
    expect(byId(fact({ runs: [] })).replicas?.detail).toBe("no stallguard serve alive on this database");
  });
});
