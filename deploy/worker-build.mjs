// How calibrate's replay worker (router-ext/calibrate/replay-worker.ts) is
// bundled: into dist/ by deploy/build.mjs, and from source on the spot by
// router-ext/calibrate/worker-file.ts. One definition, so the worker tests
// and benches start from source is the one stallguard ships.
import { join } from "node:path";

// The worker starts once per share of calibrate --db --jobs N: the repo's own
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

/** esbuild's options for the worker bundle at `outfile`, from the repo at `root`. */
export function replayWorkerBuild(root, outfile, define = {}) {
  return {
    entryPoints: [join(root, "router-ext/calibrate/replay-worker.ts")],
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
