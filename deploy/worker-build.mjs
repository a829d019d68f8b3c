// How stallguard's worker threads are bundled: into dist/ by deploy/build.mjs,
// and from source on the spot by router-ext/worker-file.ts. One definition,
// so the worker tests and benches start from source is the one stallguard ships.
import { join } from "node:path";

// calibrate --db --jobs N starts a replay worker per share: the repo's own
// modules are declared free of side effects in its bundle, so what it never
// calls (zod schemas, the config parser) is left out and its start-up stays
// that of an empty worker. Only relative imports of the repo's .ts files are marked.
const repoModulesPure = {
  name: "repo-modules-pure",
  setup(b) {
    b.onResolve({ filter: /^\.\.?\/.*\.ts$/ }, (args) => ({
      path: join(args.resolveDir, args.path),
      sideEffects: false,
    }));
  },
};

/** Each worker's name (its bundle is dist/<name>.mjs) and entry file. */
export const WORKERS = {
  "calibrate-replay-worker": "router-ext/calibrate/replay-worker.ts",
  "gate-writer-worker": "router-ext/db/writer-worker.ts",
  "watchdog-tick-worker": "router-ext/watchdog/tick-worker.ts",
};

/** esbuild's options for the bundle of worker `name` at `outfile`, from the repo at `root`. */
export function workerBuild(root, name, outfile, define = {}) {
  return {
    entryPoints: [join(root, WORKERS[name])],
    outfile,
    plugins: [repoModulesPure],
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    define,
    logLevel: "warning",
  };
}
