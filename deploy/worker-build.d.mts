// Types of deploy/worker-build.mjs for router-ext/calibrate/worker-file.ts.
import type { BuildOptions } from "esbuild";

export function replayWorkerBuild(
  root: string,
  outfile: string,
  define?: Record<string, string>,
): BuildOptions;
