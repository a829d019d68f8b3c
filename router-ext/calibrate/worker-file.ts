// The file a calibrate replay worker starts on. In the bundle
// (dist/stallguard.mjs) it is the sibling deploy/build.mjs wrote,
// dist/calibrate-replay-worker.mjs. From source (tsx, vitest, the benches)
// the worker is bundled on the spot with the same esbuild options
// (deploy/worker-build.mjs) into node_modules/.cache/stallguard, where its
// packages resolve from the repo's node_modules, and deleted after the run:
// node 20 does not run a .ts worker on the loader the main thread was started
// with, and tsx's loader registered in each worker cost about 2.5 s of CPU per
// worker (bench/core-replay.ts, load average 7 to 8) against about 0.1 s.
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export interface WorkerFile {
  url: URL;
  /** Node flags for the worker: the main thread's for the bundle, none from source (tsx's loader is not needed). */
  execArgv: string[] | undefined;
  dispose(): void;
}

export async function replayWorkerFile(): Promise<WorkerFile> {
  const here = import.meta.url;
  if (!here.endsWith(".ts"))
    return { url: new URL("./calibrate-replay-worker.mjs", here), execArgv: undefined, dispose() {} };
  const root = fileURLToPath(new URL("../..", here));
  const dir = join(root, "node_modules", ".cache", "stallguard");
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `calibrate-replay-worker-${process.pid}-${randomBytes(4).toString("hex")}.mjs`);
  const [{ build }, { replayWorkerBuild }] = await Promise.all([
    import("esbuild"),
    import("../../deploy/worker-build.mjs"),
  ]);
  await build(replayWorkerBuild(root, out));
  return { url: pathToFileURL(out), execArgv: [], dispose: () => rmSync(out, { force: true }) };
}
