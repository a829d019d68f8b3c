// Types of deploy/worker-build.mjs for router-ext/worker-file.ts.
import type { BuildOptions } from "esbuild";

export const WORKERS: Record<
  "calibrate-replay-worker" | "gate-writer-worker" | "watchdog-tick-worker",
  string
>;

export function workerBuild(
  root: string,
  name: keyof typeof WORKERS,
  outfile: string,
  define?: Record<string, string>,
): BuildOptions;
