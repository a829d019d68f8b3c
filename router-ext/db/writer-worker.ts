// The gate's writer thread: a connection of its own to the store's SQLite
// file that writes the jobs the main thread's write queue hands it, one
// transaction per message, in the order they came. A commit (its WAL frames
// and fsync-free COMMIT still cost about 0.5 ms a batch of 32 records) then
// never holds the event loop that serves /v1. It also runs the admin page's
// and the API's reads (router-ext/store/thread-reads.ts), one statement per
// message: a session list over a busy week of requests took 176 ms. Started
// by router-ext/db/writer-thread.ts; bundled as dist/gate-writer-worker.mjs.
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import type { SqlParams } from "../store/sql.ts";
import { SqliteSql } from "../store/sqlite-sql.ts";
import { openWriterConnection } from "./open.ts";
import { errorFields, runJob, type WriterJob } from "./writer-jobs.ts";

export const WRITER_ROLE = "stallguard gate writer";

/** What the thread is started with (structured clone: plain data). */
export interface WriterData {
  role: typeof WRITER_ROLE;
  path: string;
  busyTimeoutMs: number;
}

/** From the main thread: one transaction of jobs, or one read statement (its rows; one: the first row alone). */
export type WriterRequest =
  | { id: number; jobs: WriterJob[] }
  | { id: number; read: { sql: string; params?: SqlParams; one: boolean } };

/** To the main thread: opened (or why not), then one answer per request. */
export type WriterMessage =
  | { type: "ready" }
  | { type: "unusable"; message: string }
  | { type: "done"; id: number; outs: unknown[] }
  | { type: "failed"; id: number; error: ReturnType<typeof errorFields> };

/** Writes each request's jobs in one transaction on `sql`, or runs its read, answering through `post`. */
export function serveRequests(sql: SqliteSql, post: (m: WriterMessage) => void) {
  return async (r: WriterRequest): Promise<void> => {
    try {
      const outs = "read" in r ? await read(sql, r.read) : await writeJobs(sql, r.jobs);
      post({ type: "done", id: r.id, outs });
    } catch (err) {
      post({ type: "failed", id: r.id, error: errorFields(err) });
    }
  };
}

function writeJobs(sql: SqliteSql, jobs: readonly WriterJob[]): Promise<unknown[]> {
  return sql.tx(async (q) => {
    const out: unknown[] = [];
    for (const job of jobs) out.push(await runJob(job, q));
    return out;
  });
}

/** A read's rows; `one` answers the first row alone (undefined when there is none), as Sql.get does. */
async function read(
  sql: SqliteSql,
  r: { sql: string; params?: SqlParams; one: boolean },
): Promise<unknown[]> {
  return r.one ? [await sql.get(r.sql, r.params)] : sql.all(r.sql, r.params);
}

if (!isMainThread && parentPort && (workerData as WriterData | null)?.role === WRITER_ROLE) {
  const port = parentPort;
  const data = workerData as WriterData;
  try {
    const sql = new SqliteSql(openWriterConnection(data.path, data.busyTimeoutMs));
    const serve = serveRequests(sql, (m) => port.postMessage(m));
    port.on("message", (r: WriterRequest) => void serve(r));
    port.postMessage({ type: "ready" } satisfies WriterMessage);
  } catch (err) {
    port.postMessage({ type: "unusable", message: String((err as Error)?.message ?? err) });
  }
}
