// Bundles the three deliverables with esbuild: the CLI (Node) with the worker
// threads it starts beside it (dist/calibrate-replay-worker.mjs for calibrate
// --db, dist/gate-writer-worker.mjs for serve's SQLite writes,
// dist/watchdog-tick-worker.mjs for serve's in-process watchdog), the
// opencode plugin (one self-contained ESM file for opencode's Bun runtime) and
// the admin page's browser script. Runs on `npm install` (prepare) and `npm start`.
import { chmodSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { WORKERS, workerBuild } from "./worker-build.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
const define = { __STALLGUARD_VERSION__: JSON.stringify(version) };

await Promise.all([
  build({
    entryPoints: [join(root, "router-ext/cli/main.ts")],
    outfile: join(root, "dist/stallguard.mjs"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    banner: { js: "#!/usr/bin/env node" },
    define,
    logLevel: "warning",
  }),
  // The CLI finds them as its siblings (router-ext/worker-file.ts).
  ...Object.keys(WORKERS).map((name) =>
    build(workerBuild(root, name, join(root, `dist/${name}.mjs`), define)),
  ),
  build({
    entryPoints: [join(root, "plugin/index.ts")],
    outfile: join(root, "dist/plugin/stallguard.js"),
    bundle: true,
    platform: "node",
    format: "esm",
    target: "esnext",
    define,
    logLevel: "warning",
  }),
  build({
    entryPoints: [join(root, "router-ext/admin/client/main.ts")],
    outfile: join(root, "dist/admin/app.js"),
    bundle: true,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    define,
    logLevel: "warning",
  }),
]);
chmodSync(join(root, "dist/stallguard.mjs"), 0o755);
