// Builds the bundles (dist/stallguard.mjs, dist/plugin/stallguard.js,
// dist/admin/app.js) once before any e2e file runs: files that start opencode
// with the plugin or run the CLI need them, and building per file let two
// parallel files rewrite dist/ under each other.
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

export default function setup(): void {
  const repo = fileURLToPath(new URL("../..", import.meta.url));
  execFileSync("node", ["deploy/build.mjs"], { cwd: repo, stdio: "inherit" });
}
