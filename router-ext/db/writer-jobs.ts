// The writes the writer thread does, as values: each kind's data, how it is
// written on the thread's own connection, and what it reports back (the items
// dropped for their own reason). Errors cross the thread as their code, name and message.
import type { Sql } from "../store/sql.ts";
import { type GateBatch, writeGateBatch } from "./gate-batch.ts";

export interface GateBatchJob {
  kind: "gate batch";
  batch: GateBatch;
}

/** Every kind of job the writer thread takes. */
export type WriterJob = GateBatchJob;

/** An error as it crosses the thread. */
export interface ErrorFields {
  code: string | null;
  name: string;
  message: string;
}

/** The items dropped for their own reason (the rest is written). */
export interface GateBatchReport {
  drops: Array<{ label: string; error: ErrorFields }>;
}

/** Writes one job on `q` (inside the thread's transaction). */
export async function runJob(job: WriterJob, q: Sql): Promise<GateBatchReport> {
  const drops: GateBatchReport["drops"] = [];
  await writeGateBatch(job.batch, q, (label, err) => drops.push({ label, error: errorFields(err) }));
  return { drops };
}

export function errorFields(err: unknown): ErrorFields {
  const e = err as { code?: unknown; name?: unknown; message?: unknown } | null;
  return {
    code: typeof e?.code === "string" ? e.code : null,
    name: typeof e?.name === "string" ? e.name : "Error",
    message: typeof e?.message === "string" ? e.message : String(err),
  };
}

/** The error again, with its code (what isUnavailable and the drop log read). */
export function errorFrom(f: ErrorFields): Error {
  const err = new Error(f.message) as Error & { code?: string };
  err.name = f.name;
  if (f.code !== null) err.code = f.code;
  return err;
}
