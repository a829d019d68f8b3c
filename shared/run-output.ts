// Files that are what a run produced, never a change to the project's
// content: logs, test reports, coverage data, caches, bytecode and objects,
// installed dependencies, bundler output. Rerunning a failing test rewrites
// them with new timings every time, and a dev server appends to its log while
// the agent works, so counting them as landed would make a stuck agent look
// productive. The same list serves the live probe (which file changed) and
// the replay (which file a command names), so both judge a path alike.

/** Directory names whose whole content is produced by a run. */
const OUTPUT_DIRS = new Set([
  "__pycache__",
  ".pytest_cache",
  ".mypy_cache",
  ".ruff_cache",
  ".hypothesis",
  ".tox",
  ".nox",
  ".cache",
  "node_modules",
  ".nyc_output",
  "coverage",
  "htmlcov",
  "test-results",
  "test-reports",
  "playwright-report",
  "allure-results",
  ".next",
  ".nuxt",
  ".turbo",
  ".parcel-cache",
  ".gradle",
  ".eggs",
  "dist",
]);

/** File names produced by a run (matched on the last path segment). */
const OUTPUT_FILE =
  /^(?:.+\.log(?:\.\d+)?|nohup\.out|\.coverage(?:\..+)?|coverage\.(?:xml|json|out|txt)|cover(?:age)?\.out|lcov\.info|.+\.lcov|.+\.coverprofile|(?:.*[-_.])?junit(?:[-_.].*)?\.xml|TEST-.+\.xml|.+\.py[co]|.+\.class|.+\.o|.+\.obj|.+\.tsbuildinfo|\.eslintcache|\.stylelintcache|\.testmondata|\.DS_Store)$/i;

/** The path (relative or absolute, either slash) is run output, not project content. */
export function isRunOutput(path: string): boolean {
  const parts = path.replace(/\\/g, "/").split("/");
  const name = parts[parts.length - 1] ?? "";
  if (OUTPUT_FILE.test(name)) return true;
  for (let i = 0; i < parts.length - 1; i++) {
    const p = parts[i] as string;
    if (OUTPUT_DIRS.has(p) || p.endsWith(".egg-info")) return true;
  }
  return false;
}
