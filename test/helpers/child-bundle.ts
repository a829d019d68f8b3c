// A test's child-process script (a file in test/helpers) bundled by esbuild
// into one .mjs, packages left external, so the child starts in plain node
// without a TypeScript loader: fast enough to start many, or many times.
import { join } from "node:path";
import { build } from "esbuild";

const HELPERS = import.meta.dirname;

/** Bundles test/helpers/`helper` to `outfile`; returns `outfile`. */
export async function bundleChild(helper: string, outfile: string): Promise<string> {
  await build({
    entryPoints: [join(HELPERS, helper)],
    outfile,
    bundle: true,
    platform: "node",
    format: "esm",
    packages: "external",
    logLevel: "warning",
  });
  return outfile;
}
