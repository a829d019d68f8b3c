// The main thread's side of the gate's writer thread (writer-worker.ts): the
// write queue hands it a transaction of jobs and gets each job's report once
// committed, or the database's error with its code (so a locked, full or
// read-only file is queued and retried exactly as a write done here); the
// admin page's reads (store/thread-reads.ts) hand it one statement and get
// its rows. A thread that cannot start, or dies, answers null from then on:
// the queue then writes (and a read runs) here, on the main connection, and
// nothing is lost (a batch the thread committed just before it died finds
// its records there: gate-batch.ts).
import { Worker } from "node:worker_threads";
import type { SqlParams } from "../store/sql.ts";
import type { ReadOffload } from "../store/thread-reads.ts";
import { workerFile } from "../worker-file.ts";
import type { WriteOffload } from "./write-queue.ts";
import { errorFrom, type WriterJob } from "./writer-jobs.ts";
import { WRITER_ROLE, type WriterData, type WriterMessage, type WriterRequest } from "./writer-worker.ts";

interface Waiting {
  resolve(outs: unknown[] | null): void;
  reject(err: Error): void;
}

export class WriterThread implements WriteOffload, ReadOffload {
  private seq = 0;
  private readonly waiting = new Map<number, Waiting>();
  private gone = false;

  private constructor(
    private readonly worker: Worker,
    private readonly log: (line: string) => void,
  ) {
    worker.on("message", (m: WriterMessage) => this.answer(m));
    worker.on("error", (err) => this.lost(`failed (${err?.message ?? err})`));
    worker.on("exit", (code) => this.lost(`exited (${code})`));
  }

  /** The thread on the migrated SQLite file at `path`, or null (said in the log) when it cannot start. */
  static async start(
    path: string,
    busyTimeoutMs: number,
    log: (line: string) => void,
  ): Promise<WriterThread | null> {
    try {
      const file = await workerFile("gate-writer-worker");
      const data: WriterData = { role: WRITER_ROLE, path, busyTimeoutMs };
      const worker = new Worker(file.url, { workerData: data, execArgv: file.execArgv });
      const first = await firstMessage(worker);
      if (first.type !== "ready") {
        await worker.terminate();
        throw new Error(first.type === "unusable" ? first.message : "no ready message");
      }
      worker.unref();
      return new WriterThread(worker, log);
    } catch (err) {
      log(
        `store: the writer thread did not start (${(err as Error)?.message ?? err}); the gate writes on the main thread`,
      );
      return null;
    }
  }

  get writing(): boolean {
    return !this.gone;
  }

  tx(jobs: unknown[]): Promise<unknown[] | null> {
    return this.ask((id) => ({ id, jobs: jobs as WriterJob[] }));
  }

  read(sql: string, params: SqlParams | undefined, one: boolean): Promise<unknown[] | null> {
    return this.ask((id) => ({ id, read: params === undefined ? { sql, one } : { sql, params, one } }));
  }

  /** Sends one request; null when the thread is gone (before or while it waits). */
  private ask(request: (id: number) => WriterRequest): Promise<unknown[] | null> {
    if (this.gone) return Promise.resolve(null);
    const id = ++this.seq;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage(request(id));
    });
  }

  async close(): Promise<void> {
    if (!this.gone) {
      this.gone = true;
      await this.worker.terminate();
    }
    this.settleAll();
  }

  private answer(m: WriterMessage): void {
    if (m.type !== "done" && m.type !== "failed") return;
    const w = this.waiting.get(m.id);
    if (!w) return;
    this.waiting.delete(m.id);
    if (m.type === "done") w.resolve(m.outs);
    else w.reject(errorFrom(m.error));
  }

  /** The thread is gone: what waits is written here instead (a transaction cut short rolled back). */
  private lost(how: string): void {
    if (this.gone) return;
    this.gone = true;
    this.log(`store: the writer thread ${how}; the gate writes on the main thread`);
    this.settleAll();
  }

  private settleAll(): void {
    for (const w of this.waiting.values()) w.resolve(null);
    this.waiting.clear();
  }
}

function firstMessage(worker: Worker): Promise<WriterMessage> {
  return new Promise((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
    worker.once("exit", (code) => reject(new Error(`exited (${code}) before it was ready`)));
  });
}
