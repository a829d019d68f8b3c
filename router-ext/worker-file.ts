// The file a worker thread starts on. In the bundle (dist/stallguard.mjs) it
// is the sibling deploy/build.mjs wrote (dist/<name>.mjs). From source (tsx,
// vitest, the benches) the worker is bundled on the spot with the same
// esbuild options (deploy/worker-build.mjs) into node_modules/.cache/stallguard,
// where its packages resolve from the repo's node_modules, once per thread
// (a test file starts many servers) and deleted when it exits: node 20 does not run a .ts worker on the loader the main thread was
// started with, and tsx's loader registered in each worker cost about 2.5 s of
// CPU per worker (bench/core-replay.ts, load average 7 to 8) against about 0.1 s.
import { randomBytes } from "node:crypto";
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/** The workers stallguard starts (deploy/worker-build.mjs WORKERS names their entry files). */
export type WorkerName = "calibrate-replay-worker" | "gate-writer-worker" | "watchdog-tick-worker";

export interface WorkerFile {
  url: URL;
  /** Node flags for the worker: the main thread's for the bundle, none from source (tsx's loader is not needed). */
  execArgv: string[] | undefined;
}

/** From source: each worker bundled once per thread that starts it, deleted when that thread exits. */
const built = new Map<WorkerName, Promise<URL>>();

export async function workerFile(name: WorkerName): Promise<WorkerFile> {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) return { url: new URL(`./${name}.mjs`, here), execArgv: undefined };
  let url = built.get(name);
  if (!url) {
    url = bundle(name);
    built.set(name, url);
    url.catch(() => built.delete(name));
  }
  return { url: await url, execArgv: [] };
}

async function bundle(name: WorkerName): Promise<URL> {
  const root = fileURLToPath(new URL("..", import.meta.url));
  const dir = join(root, "node_modules", ".cache", "stallguard");
  mkdirSync(dir, { recursive: true });
  const out = join(dir, `${name}-${process.pid}-${randomBytes(4).toString("hex")}.mjs`);
  const [{ build }, { workerBuild }] = await Promise.all([
    import("esbuild"),
    import("../deploy/worker-build.mjs"),
  ]);
  await build(workerBuild(root, name, out));
  process.once("exit", () => rmSync(out, { force: true }));
  return pathToFileURL(out);
}
