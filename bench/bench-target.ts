// Where a bench sends its load: one `serve` on a fresh SQLite file, or on a
// throwaway PostgreSQL (test/helpers/postgres.ts), one replica or several
// behind a real HAProxy (test/helpers/haproxy.ts), as a team would run them.
import type { ChildProcess } from "node:child_process";
import { join } from "node:path";
import { startHaproxy } from "../test/helpers/haproxy.ts";
import { startPostgres } from "../test/helpers/postgres.ts";
import { startServe } from "./serve-child.ts";

export interface BenchTarget {
  /** Where to send the load (a serve, or the balancer in front of several). */
  url: string;
  stop(): Promise<void>;
}

const TOKENS = { STALLGUARD_ADMIN_TOKEN: "bench", STALLGUARD_TOKEN: "bench-plugin" };

async function stopServe(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const gone = new Promise((r) => proc.once("exit", r));
  proc.kill("SIGTERM");
  await gone;
}

export async function benchTarget(
  dir: string,
  engine: "sqlite" | "postgres",
  replicas: number,
): Promise<BenchTarget> {
  if (engine === "sqlite") {
    const { proc, url } = await startServe(dir, { env: TOKENS });
    return { url, stop: () => stopServe(proc) };
  }
  const pg = await startPostgres();
  const procs: ChildProcess[] = [];
  const stop = async () => {
    await Promise.all(procs.map(stopServe));
    await pg.stop();
  };
  try {
    const serves = await Promise.all(
      Array.from({ length: replicas }, (_, i) =>
        startServe(join(dir), {
          db: pg.url,
          env: { ...TOKENS, STALLGUARD_PG_PASSWORD: pg.password, STALLGUARD_REPLICA: `r${i}` },
        }),
      ),
    );
    procs.push(...serves.map((s) => s.proc));
    if (replicas === 1) return { url: serves[0]?.url ?? "", stop };
    const lb = await startHaproxy(
      serves.map((s, i) => ({ name: `r${i}`, port: Number(new URL(s.url).port) })),
    );
    return {
      url: lb.url,
      stop: async () => {
        await lb.stop();
        await stop();
      },
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
