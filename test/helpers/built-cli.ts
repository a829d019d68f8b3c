// Runs the built CLI (dist/stallguard.mjs, built by the e2e global setup) in
// a child node from the repo, with its exit code and both streams.
import { execFile } from "node:child_process";
import { join } from "node:path";

export const REPO_ROOT = join(import.meta.dirname, "..", "..");
export const BUILT_CLI = join(REPO_ROOT, "dist", "stallguard.mjs");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** `node <args>` in the repo (args usually start with BUILT_CLI). */
export function node(
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      {
        cwd: REPO_ROOT,
        timeout: opts.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
        ...(opts.env ? { env: opts.env } : {}),
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
