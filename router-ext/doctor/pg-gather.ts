// `stallguard doctor`'s shell for a PostgreSQL store: reads where the password
// comes from (pg-password.ts decides whether it is usable; the value never
// leaves this function), connects with node-postgres (loaded lazily, only for
// a postgres:// target), reads the schema version and the serve runs, all
// bounded by a timeout. Nothing is written: doctor does not migrate.
import { MIGRATIONS } from "../db/migrations.ts";
import { ALIVE_INTERVAL_MS } from "../server/router-alive.ts";
import { pgAppliedVersions } from "../store/pg-migrate.ts";
import { pgProblem } from "../store/pg-open.ts";
import { pgPassword } from "../store/pg-password.ts";
import { openPgSql } from "../store/pg-sql.ts";
import { type PgTarget, parsePgTarget, showPgTarget } from "../store/pg-target.ts";
import type { Sql } from "../store/sql.ts";
import type { PgPasswordSource, PgRunFact, PgStoreFact } from "./pg-facts.ts";

function passwordOf(env: NodeJS.ProcessEnv): { source: PgPasswordSource; value?: string } {
  try {
    const value = pgPassword(env);
    if (env.STALLGUARD_PG_PASSWORD !== undefined) return { source: { kind: "env" }, value };
    if (env.STALLGUARD_PG_PASSWORD_FILE !== undefined)
      return { source: { kind: "file", path: env.STALLGUARD_PG_PASSWORD_FILE }, value };
    return { source: { kind: "none" } };
  } catch (err) {
    return { source: { kind: "bad", problem: (err as Error).message } };
  }
}

const NEWEST = Math.max(0, ...MIGRATIONS.map((m) => m.version));

/** The runs still marked running (alive or crashed), and the latest run whatever its state. */
async function runsOf(sql: Sql): Promise<PgRunFact[] | null> {
  const exists = await sql.get<{ t: string | null }>("SELECT to_regclass('router_runs')::text AS t");
  if (!exists?.t) return null;
  const rows = await sql.all<{
    seq: number;
    pid: number;
    version: string;
    started_at: number;
    alive_at: number;
    stopped_at: number | null;
  }>(
    `SELECT seq, pid, version, started_at, alive_at, stopped_at FROM router_runs
     WHERE stopped_at IS NULL OR seq = (SELECT MAX(seq) FROM router_runs)
     ORDER BY alive_at DESC LIMIT 100`,
  );
  return rows.map((r) => ({
    seq: Number(r.seq),
    pid: Number(r.pid),
    version: String(r.version),
    startedAt: Number(r.started_at),
    aliveAt: Number(r.alive_at),
    stoppedAt: r.stopped_at === null ? null : Number(r.stopped_at),
  }));
}

async function probe(
  target: PgTarget,
  password: string | undefined,
): Promise<Pick<PgStoreFact, "connection" | "schema" | "runs">> {
  const sql = await openPgSql({ target, password, max: 1 });
  try {
    await sql.get("SELECT 1");
    const applied = new Set(await pgAppliedVersions(sql));
    const version = Math.max(0, ...applied);
    const pending = MIGRATIONS.map((m) => m.version)
      .filter((v) => !applied.has(v))
      .sort((a, b) => a - b);
    return {
      connection: { ok: true },
      schema: { version, newest: NEWEST, pending },
      runs: await runsOf(sql),
    };
  } catch (err) {
    const e = err as Error & { code?: string };
    return {
      connection: { ok: false, code: e.code ?? null, problem: pgProblem(e) },
      schema: null,
      runs: null,
    };
  } finally {
    await sql.close().catch(() => {});
  }
}

/** The facts about the PostgreSQL store `url` names, within `timeoutMs`. */
export async function gatherPgStore(
  url: string,
  env: NodeJS.ProcessEnv,
  timeoutMs = 8000,
): Promise<PgStoreFact> {
  // Until the URL is known to be valid it may hold a password: never echoed.
  const base = { target: "the postgres:// URL", address: null, aliveMs: ALIVE_INTERVAL_MS };
  let target: PgTarget;
  try {
    target = parsePgTarget(url);
  } catch (err) {
    const problem = (err as Error).message;
    return {
      ...base,
      password: passwordOf(env).source,
      connection: { ok: false, code: null, problem },
      schema: null,
      runs: null,
    };
  }
  const pw = passwordOf(env);
  const head = {
    ...base,
    target: showPgTarget(target),
    address: `${target.host}:${target.port}`,
    password: pw.source,
  };
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Pick<PgStoreFact, "connection" | "schema" | "runs">>((resolve) => {
    timer = setTimeout(
      () =>
        resolve({
          connection: { ok: false, code: "timeout", problem: `no answer within ${timeoutMs / 1000}s` },
          schema: null,
          runs: null,
        }),
      timeoutMs,
    );
  });
  try {
    return { ...head, ...(await Promise.race([probe(target, pw.value), late])) };
  } finally {
    clearTimeout(timer);
  }
}
