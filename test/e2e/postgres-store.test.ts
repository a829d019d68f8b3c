// The PostgreSQL engine on a real PostgreSQL (test/helpers/postgres.ts): the
// Sql over a pool, the migrations (the same as SQLite's, applied once when
// replicas race), the tick lead, the alert-once claim, the gate's batch
// written once, retention's chunked prune and the gate's facts' query.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { served } from "../../router-ext/breaker/testing.ts";
import { emptyGateBatch, type GateBatch, writeGateBatch } from "../../router-ext/db/gate-batch.ts";
import { readGateFacts } from "../../router-ext/db/gate-facts.ts";
import { MIGRATIONS } from "../../router-ext/db/migrations.ts";
import { openDatabase } from "../../router-ext/db/open.ts";
import { checkPgMigrations } from "../../router-ext/doctor/pg-checks.ts";
import { gatherPgStore } from "../../router-ext/doctor/pg-gather.ts";
import { alertClaimKey, claimAlert, pruneAlertClaims } from "../../router-ext/store/alert-claims.ts";
import { META_TABLE, MIGRATE_LOCK, migratePg, pgSchemaVersion } from "../../router-ext/store/pg-migrate.ts";
import { openPgDatabase } from "../../router-ext/store/pg-open.ts";
import { openPgSql, type PgSql } from "../../router-ext/store/pg-sql.ts";
import { openPgStore } from "../../router-ext/store/pg-store.ts";
import { parsePgTarget } from "../../router-ext/store/pg-target.ts";
import { leadTick, tryLeadTick } from "../../router-ext/store/replica-lead.ts";
import { CONTEXTS_BEFORE, variedHistory } from "../helpers/context-history.ts";
import { type PgServer, pgBin, pgTitle, startPostgres } from "../helpers/postgres.ts";
import { pgColumns, pgIndexes, sqliteColumns, sqliteIndexes } from "../helpers/schema-shape.ts";

describe.skipIf(!pgBin)(pgTitle("PostgreSQL engine (real PostgreSQL)"), () => {
  let server: PgServer;
  const pools: PgSql[] = [];
  const open = async (url: string, password = server.password): Promise<PgSql> => {
    const sql = await openPgSql({ target: parsePgTarget(url), password });
    pools.push(sql);
    return sql;
  };

  beforeAll(async () => {
    server = await startPostgres();
  });
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close().catch(() => {})));
    await server?.stop();
  });

  it("connects with the role's password and refuses a wrong one", async () => {
    const sql = await open(server.url);
    expect(await sql.get("SELECT current_user AS u")).toEqual({ u: "stallguard" });
    const wrong = await open(server.url, "not-the-password");
    await expect(wrong.get("SELECT 1")).rejects.toThrow(/password authentication failed/);
  });

  it("reads BIGINT and NUMERIC back as numbers, binds ? and @name", async () => {
    const sql = await open(server.url);
    await sql.run("CREATE TABLE nums (k TEXT PRIMARY KEY, at BIGINT NOT NULL, usd DOUBLE PRECISION)");
    const at = 1_764_000_000_123; // a ms timestamp, far past 2^31
    await sql.run("INSERT INTO nums (k, at, usd) VALUES (?, ?, ?)", ["a", at, 0.25]);
    await sql.run("INSERT INTO nums (k, at, usd) VALUES (@k, @at, @usd)", { k: "b", at: at + 1, usd: null });
    expect(await sql.all("SELECT k, at, usd FROM nums ORDER BY k")).toEqual([
      { k: "a", at, usd: 0.25 },
      { k: "b", at: at + 1, usd: null },
    ]);
    expect(await sql.get("SELECT COUNT(*) AS n, SUM(at) AS s FROM nums WHERE k <> '?'")).toEqual({
      n: 2,
      s: 2 * at + 1,
    });
    const up = await sql.run(
      "INSERT INTO nums (k, at) VALUES (@k, @at) ON CONFLICT (k) DO UPDATE SET at = excluded.at WHERE nums.at < excluded.at",
      { k: "a", at: at + 5 },
    );
    expect(up.changes).toBe(1);
    expect((await sql.run("DELETE FROM nums WHERE k = ?", ["none"])).changes).toBe(0);
  });

  it("tx commits on resolve, rolls back on throw, and a nested tx joins the outer one", async () => {
    const sql = await open(server.url);
    await sql.run("CREATE TABLE txt (k TEXT PRIMARY KEY)");
    await sql.tx(async (q) => {
      await q.run("INSERT INTO txt (k) VALUES (?)", ["kept"]);
      await q.tx((inner) => inner.run("INSERT INTO txt (k) VALUES (?)", ["nested"]));
    });
    await expect(
      sql.tx(async (q) => {
        await q.run("INSERT INTO txt (k) VALUES (?)", ["gone"]);
        await q.tx(async (inner) => {
          await inner.run("INSERT INTO txt (k) VALUES (?)", ["gone too"]);
          throw new Error("boom");
        });
      }),
    ).rejects.toThrow("boom");
    expect(await sql.all("SELECT k FROM txt ORDER BY k")).toEqual([{ k: "kept" }, { k: "nested" }]);
  });

  it("applies every migration, and its tables, columns and indexes equal SQLite's", async () => {
    const sql = await open(await server.createDatabase("shape"));
    const applied = await migratePg(sql);
    const lite = openDatabase(":memory:");
    try {
      const versions = (
        lite.prepare("SELECT version FROM schema_migrations ORDER BY 1").all() as Array<{
          version: number;
        }>
      ).map((r) => r.version);
      expect(applied).toEqual(versions);
      expect(await pgSchemaVersion(sql)).toBe(Math.max(...versions));
      const pgCols = await pgColumns(sql, [META_TABLE]);
      expect(pgCols).toEqual(sqliteColumns(lite));
      expect(Object.keys(pgCols).length).toBeGreaterThan(20);
      expect(await pgIndexes(sql)).toEqual(sqliteIndexes(lite));
    } finally {
      lite.close();
    }
    expect(await migratePg(sql)).toEqual([]);
  });

  it("doctor names a migration below the highest that a database has not applied; serve's migration applies it", async () => {
    const url = await server.createDatabase("gap");
    const sql = await open(url);
    await migratePg(
      sql,
      MIGRATIONS.filter((m) => m.version !== 203),
    );
    const env = { STALLGUARD_PG_PASSWORD: server.password };
    const before = await gatherPgStore(url, env);
    expect(before.schema).toEqual({ version: 301, newest: 301, pending: [203] });
    expect(checkPgMigrations(before)).toMatchObject({
      status: "fail",
      detail:
        "schema version 301, but this build's migration(s) 203 not applied: serve will migrate on start",
    });
    expect(await migratePg(sql)).toEqual([203]);
    expect((await gatherPgStore(url, env)).schema).toEqual({ version: 301, newest: 301, pending: [] });
  });

  it("two migrators racing on a new database apply each migration exactly once", async () => {
    const url = await server.createDatabase("race");
    const [a, b] = [await open(url), await open(url)];
    // Hold the lock so both migrators are queued on it, then let them go together.
    const held = await a.pool.connect();
    await held.query(`SELECT pg_advisory_lock(${MIGRATE_LOCK})`);
    const racing = Promise.all([migratePg(a), migratePg(b)]);
    await new Promise((r) => setTimeout(r, 200));
    await held.query(`SELECT pg_advisory_unlock(${MIGRATE_LOCK})`);
    held.release();
    const [ra, rb] = await racing;
    expect([ra.length === 0, rb.length === 0].filter(Boolean)).toHaveLength(1);
    expect([...ra, ...rb].sort((x, y) => x - y)).toEqual(
      (await a.all<{ version: number }>("SELECT version FROM schema_migrations ORDER BY 1")).map(
        (r) => r.version,
      ),
    );
  });

  it("refuses a database that holds another program's tables, and leaves it as it was", async () => {
    const sql = await open(await server.createDatabase("other_app"));
    await sql.run("CREATE TABLE invoices (id BIGINT PRIMARY KEY)");
    await expect(migratePg(sql)).rejects.toThrow(/not stallguard's .*invoices/);
    expect(await sql.all("SELECT to_regclass('schema_migrations')::text AS t")).toEqual([{ t: null }]);
  });

  it("one replica leads a tick at a time; the lead goes with the transaction", async () => {
    const url = await server.createDatabase("lead");
    const [a, b] = [await open(url), await open(url)];
    let release: () => void = () => {};
    const holding = new Promise<void>((r) => {
      release = r;
    });
    let started: () => void = () => {};
    const aHolds = new Promise<void>((r) => {
      started = r;
    });
    const tickA = leadTick(a, async () => {
      started();
      await holding;
      return "a";
    });
    await aHolds;
    expect(await leadTick(b, async () => "b")).toEqual({ ran: false });
    expect(await b.tx((q) => tryLeadTick(q))).toBe(false);
    release();
    expect(await tickA).toEqual({ ran: true, value: "a" });
    expect(await leadTick(b, async () => "b")).toEqual({ ran: true, value: "b" });
  });

  it("of two replicas claiming one incident's alert, exactly one wins", async () => {
    const url = await server.createDatabase("claims");
    const [a, b] = [await open(url), await open(url)];
    await migratePg(a);
    const alert = {
      source: "no-progress",
      state: "trigger",
      at: 1_764_000_000_000,
      dedup_key: "ses_root",
    } as const;
    const key = alertClaimKey(alert);
    const wins = await Promise.all(
      Array.from({ length: 10 }, (_, i) => claimAlert(i % 2 ? a : b, key, i % 2 ? "a" : "b", 1000 + i)),
    );
    expect(wins.filter(Boolean)).toHaveLength(1);
    expect(await claimAlert(a, alertClaimKey({ ...alert, state: "resolve" }), "a", 2000)).toBe(true);
    expect(await pruneAlertClaims(a, 1500)).toBe(1);
    expect(await a.get("SELECT COUNT(*) AS n FROM alert_claims")).toEqual({ n: 1 });
  });

  it("a gate batch written again (its COMMIT's answer lost) adds nothing; another batch is written", async () => {
    const url = await server.createDatabase("batches");
    const sql = await open(url);
    await migratePg(sql);
    const at = 1_800_000_000_000;
    const batch = () => {
      const b = emptyGateBatch();
      b.records.push(served("m", "w", at, "root"), { ...served("m", "w", at + 1, "root"), refused: true });
      return b;
    };
    const drops: string[] = [];
    const write = (b: GateBatch) => {
      b.tries++;
      return sql.tx((q) => writeGateBatch(b, q, (label) => drops.push(label)));
    };
    const figures = async () => ({
      requests: await sql.get("SELECT COUNT(*) AS n FROM requests"),
      refusals: await sql.get("SELECT value FROM counters WHERE name = 'refusals_total'"),
    });
    const one = batch();
    await write(one);
    expect(await figures()).toEqual({ requests: { n: 2 }, refusals: { value: 1 } });
    await write(one);
    expect(await figures()).toEqual({ requests: { n: 2 }, refusals: { value: 1 } });
    await write(batch());
    expect(await figures()).toEqual({ requests: { n: 4 }, refusals: { value: 2 } });
    // A client that sends no session: its batch written again adds nothing either.
    const anon = emptyGateBatch();
    anon.records.push({ ...served("m", "x", at), session_id: null, root_id: null, client: null });
    await write(anon);
    await write(anon);
    expect(await figures()).toMatchObject({ requests: { n: 5 } });
    // Its retry after a rollback is written though a record like it is there (another model).
    const other = emptyGateBatch();
    other.tries = 1;
    other.records.push({ ...served("n", "x", at), session_id: null, root_id: null, client: null });
    await write(other);
    expect(await figures()).toMatchObject({ requests: { n: 6 } });
    expect(drops).toEqual([]);
  });

  it("retention prunes a request history longer than one chunk: every old request goes, the new stay", async () => {
    const url = await server.createDatabase("prune");
    const store = await openPgStore(url, { STALLGUARD_PG_PASSWORD: server.password }, { log: () => {} });
    try {
      const at = 1_800_000_000_000;
      for (let i = 0; i < 6_000; i++) store.recordRequest(served("m", `s${i % 7}`, at + i, "root"));
      for (let i = 0; i < 40; i++) store.recordRequest(served("m", "new", at + 500_000 + i, "root"));
      await store.flush();
      const r = await store.prune(at + 510_000, 100_000);
      expect(r.requests).toBe(6_000);
      expect(await store.pg.get("SELECT COUNT(*) AS n, MIN(started_at) AS first FROM requests")).toEqual({
        n: 40,
        first: at + 500_000,
      });
    } finally {
      await store.close();
    }
  });

  it("the gate's facts read each session's context as the query before did (it sorted every request)", async () => {
    const url = await server.createDatabase("contexts");
    const store = await openPgStore(url, { STALLGUARD_PG_PASSWORD: server.password }, { log: () => {} });
    try {
      for (const r of variedHistory(1_800_000_000_000, 1500)) store.recordRequest(r);
      await store.flush();
      type Context = { sessionId: string };
      const byId = <T extends Context>(rows: T[]) =>
        [...rows].sort((a, b) => a.sessionId.localeCompare(b.sessionId));
      const now = byId((await readGateFacts(store.pg)).contexts);
      expect(now.length).toBeGreaterThan(100);
      expect(now).toEqual(byId(await store.pg.all<(typeof now)[number]>(CONTEXTS_BEFORE)));
    } finally {
      await store.close();
    }
  });

  it("serve's opener: migrates with the password from the environment, and says what to fix without one", async () => {
    const url = await server.createDatabase("opener");
    const logs: string[] = [];
    await expect(openPgDatabase(url, {}, (l) => logs.push(l))).rejects.toThrow(
      /postgres:\/\/stallguard@127\.0\.0\.1:\d+\/opener: the server asks for a password: set STALLGUARD_PG_PASSWORD/,
    );
    await expect(openPgDatabase(url, { STALLGUARD_PG_PASSWORD: "wrong" }, () => {})).rejects.toThrow(
      /password authentication failed/,
    );
    await expect(
      openPgDatabase(
        url.replace(/\/opener$/, "/nope"),
        { STALLGUARD_PG_PASSWORD: server.password },
        () => {},
      ),
    ).rejects.toThrow(/does not exist/);
    const opened = await openPgDatabase(url, { STALLGUARD_PG_PASSWORD: server.password }, (l) =>
      logs.push(l),
    );
    pools.push(opened.sql);
    expect(opened.applied.length).toBeGreaterThan(10);
    expect(await pgSchemaVersion(opened.sql)).toBe(Math.max(...opened.applied));
    await expect(openPgDatabase(url.replace("stallguard@", "stallguard:pw@"), {}, () => {})).rejects.toThrow(
      /holds a password/,
    );
  });

  it("two stores on one database: one watchdog tick an interval between them", async () => {
    const url = await server.createDatabase("ticks");
    let clock = 1_800_000_000_000;
    const env = { STALLGUARD_PG_PASSWORD: server.password };
    const open2 = (name: string) => openPgStore(url, env, { log: () => {}, now: () => clock, replica: name });
    const [a, b] = [await open2("a"), await open2("b")];
    try {
      const ran: string[] = [];
      // The tick stores its watchdog_ticks row, as the real one does through /progress.
      const tick = (who: string) => async () => {
        ran.push(who);
        await a.pg.run(
          "INSERT INTO watchdog_ticks (at, received_at, servers, sessions, flagged, blind) VALUES (?, ?, 0, 0, 0, 0)",
          [clock, clock],
        );
      };
      let release: () => void = () => {};
      const held = new Promise<void>((r) => {
        release = r;
      });
      const slowA = a.leadWatchdogTick(async () => {
        await held;
        await tick("a")();
      }, 60_000);
      await new Promise((r) => setTimeout(r, 200));
      await b.leadWatchdogTick(tick("b"), 60_000); // A holds the lead: B skips
      release();
      await slowA;
      clock += 10_000;
      await b.leadWatchdogTick(tick("b"), 60_000); // A ticked 10 s ago: not due
      clock += 25_000;
      await b.leadWatchdogTick(tick("b"), 60_000); // 35 s: due again
      expect(ran).toEqual(["a", "b"]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  // Last: it stops the server. The codes are those the store's write queue reads as "retry later".
  it("a server that goes away: every failure carries a code meaning unavailable, and the pool recovers", async () => {
    const sql = await open(server.url);
    const unavailable = (err: unknown) => {
      const code = String((err as { code?: unknown }).code);
      return code.startsWith("08") || ["57P01", "57P03", "ECONNREFUSED", "ECONNRESET"].includes(code);
    };
    const codeOf = (p: Promise<unknown>) =>
      p.then(
        () => "no error",
        (err: unknown) => (unavailable(err) ? "unavailable" : String(err)),
      );
    let inTx: Promise<string> = Promise.resolve("");
    const opened = new Promise<void>((ready) => {
      inTx = codeOf(
        sql.tx(async (q) => {
          await q.get("SELECT 1");
          ready();
          await new Promise((r) => setTimeout(r, 1500));
          await q.get("SELECT 2");
        }),
      );
    });
    await opened;
    server.stopServer();
    expect(await inTx).toBe("unavailable");
    expect(await codeOf(sql.get("SELECT 1"))).toBe("unavailable");
    expect(await codeOf(sql.tx((q) => q.get("SELECT 1")))).toBe("unavailable");
    server.startServer();
    expect(await sql.get("SELECT 3 AS n")).toEqual({ n: 3 });
  });
});
