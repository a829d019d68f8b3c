// Finds the browser bundle: dist/admin/app.js as built by deploy/build.mjs, or,
// when that is missing or older than the client sources (dev and tests run
// from a checkout), an in-memory esbuild build of client/main.ts.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { packageRoot as findPackageRoot } from "../../io/config-files.ts";

/** The stallguard package root at or above `from` (the shared finder); throws outside the package. */
export function packageRoot(from: string): string {
  const root = findPackageRoot(from);
  if (root === null) throw new Error(`stallguard package root not found above ${from}`);
  return root;
}

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestMtime(p));
    else if (entry.name.endsWith(".ts")) newest = Math.max(newest, statSync(p).mtimeMs);
  }
  return newest;
}

export interface BundleOptions {
  /** Package root; found from this module's location when absent. */
  root?: string;
}

export interface BundleSource {
  /** Where the served script came from. */
  origin: "dist" | "built";
  code: string;
}

async function buildInMemory(root: string): Promise<string> {
  const { build } = await import("esbuild");
  const { version } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string };
  const out = await build({
    entryPoints: [join(root, "router-ext/admin/client/main.ts")],
    bundle: true,
    write: false,
    platform: "browser",
    format: "esm",
    target: "es2022",
    minify: true,
    define: { __STALLGUARD_VERSION__: JSON.stringify(version) },
    logLevel: "silent",
  });
  const file = out.outputFiles[0];
  if (!file) throw new Error("esbuild produced no output for the admin bundle");
  return file.text;
}

/** Loads the bundle once per loader; a failed load is retried on the next call. */
export function createBundleLoader(opts: BundleOptions = {}): () => Promise<BundleSource> {
  let pending: Promise<BundleSource> | null = null;
  const load = async (): Promise<BundleSource> => {
    const root = opts.root ?? packageRoot(dirname(fileURLToPath(import.meta.url)));
    const dist = join(root, "dist/admin/app.js");
    const clientDir = join(root, "router-ext/admin/client");
    const sharedDir = join(root, "shared");
    const hasSource = existsSync(join(clientDir, "main.ts"));
    if (existsSync(dist)) {
      const stale =
        hasSource &&
        Math.max(newestMtime(clientDir), existsSync(sharedDir) ? newestMtime(sharedDir) : 0) >
          statSync(dist).mtimeMs;
      if (!stale) return { origin: "dist", code: await readFile(dist, "utf8") };
    }
    if (!hasSource) throw new Error(`admin bundle missing: ${dist} (run npm run build)`);
    return { origin: "built", code: await buildInMemory(root) };
  };
  return () => {
    pending ??= load().catch((err: unknown) => {
      pending = null;
      throw err;
    });
    return pending;
  };
}
