import { describe, expect, it } from "vitest";
import { bashLanding } from "./bash-landing.ts";
import { bashWriteParts } from "./bash-writes.ts";
import { configSchema } from "./config.ts";
import { policyFromConfig } from "./policy.ts";
import { isRunOutput } from "./run-output.ts";
import { creditChanges, type TreeChange } from "./tree-credit.ts";

const { testPatterns } = policyFromConfig(configSchema.parse({}));
const DIR = "/home/dev/repo";
const landing = (command: string) => bashLanding(command, testPatterns, DIR);

describe("bashLanding: what a bash call may land, from its text", () => {
  it.each([
    ["sed -i 's/a/b/' src/app.py", ["src/app.py"]],
    ["cat > src/x.js <<EOF\nexport const x = 1;\nEOF", ["src/x.js"]],
    ["echo '- item' | tee -a notes.md", ["notes.md"]],
    ["sed -i 's/a/b/' src/x.py && npm test > out.txt", ["src/x.py"]],
    ["cp a.py b.py", ["b.py"]],
  ])("names its edits: %s", (command, edits) => {
    expect(landing(command)).toMatchObject({ can: true, edits, unnamed: false });
  });

  it.each([
    "sh bump.sh 2 lib.txt",
    "python3 - <<'PY'\nfrom pathlib import Path\nPath('a.py').write_text('x')\nPY",
    "python fix.py",
    "git apply fix.patch",
    "make",
    "npm run build",
    "rm stale.py",
    "git checkout -- src/app.py",
    "eslint --fix src",
    "npx jest -u",
    "ruff format .",
    "echo $(date) > stamp.txt",
  ])("may write files its text does not name: %s", (command) => {
    expect(landing(command)).toMatchObject({ can: true, unnamed: true });
  });

  it.each([
    ["npm test > out.txt", ["out.txt"]],
    ["npm test > out.txt 2>&1; cat out.txt", ["out.txt"]],
    ["pytest -q --junitxml=report.xml", []],
    ["python -m pytest tests/ 2>&1 | tee pytest.txt", ["pytest.txt"]],
    ["cat out.txt", []],
    ["grep -rn value src", []],
    ["echo x > debug.log", ["debug.log"]],
  ])("cannot land (a test run's writes are its output, reads write nothing): %s", (command, outputs) => {
    expect(landing(command)).toMatchObject({ can: false, edits: [], outputs });
  });

  it("a commit lands by its new head commit", () => {
    expect(landing("git -c user.name=t commit -qam 'fix'")).toMatchObject({ can: true, commits: true });
  });

  it("a run's redirect and a tee after a run are output; a here-document through tee is an edit", () => {
    expect(bashWriteParts("python repro.py > result.json", DIR)).toEqual({
      edits: [],
      outputs: ["result.json"],
    });
    expect(bashWriteParts("python repro.py | tee result.json", DIR).outputs).toEqual(["result.json"]);
    expect(bashWriteParts("cat <<EOF | tee result.json\n{}\nEOF", DIR).edits).toEqual(["result.json"]);
  });
});

describe("isRunOutput: what a run produces is never project content", () => {
  it.each([
    "app.log",
    "logs/server.log.1",
    "nohup.out",
    ".coverage",
    "coverage/lcov-report/index.html",
    "coverage.xml",
    "lcov.info",
    "junit.xml",
    "reports/test-junit.xml",
    "TEST-com.example.AppTest.xml",
    "src/__pycache__/app.cpython-312.pyc",
    ".pytest_cache/v/cache/lastfailed",
    "node_modules/.cache/babel/x.json",
    "pkg/foo.egg-info/PKG-INFO",
    "build/main.o",
    "tsconfig.tsbuildinfo",
    "test-results/results.json",
  ])("%s", (path) => expect(isRunOutput(path)).toBe(true));

  it.each(["src/app.py", "README.md", "out.txt", "tests/test_app.py", "src/logging.py", "package.json"])(
    "project content: %s",
    (path) => expect(isRunOutput(path)).toBe(false),
  );
});

describe("creditChanges: a call is credited only with what it wrote", () => {
  const START = 1_000_000;
  const END = START + 400;
  const change = (path: string, mtimeMs: number | null, content = true): TreeChange => ({
    path,
    content,
    mtimeMs,
    coarse: false,
  });
  const credit = (command: string, changes: TreeChange[], volatile: string[] = []) =>
    creditChanges({
      landing: landing(command),
      changes,
      start: START,
      end: END,
      root: DIR,
      cwd: DIR,
      volatile: (p) => volatile.includes(p),
    });

  it("a file written while the call ran is its; one written before it started or after it ended is someone else's", () => {
    const out = credit("sh bump.sh 3 lib.txt", [
      change("lib.txt", START + 100),
      change("status.json", START - 300),
      change("server.txt", END + 200),
    ]);
    expect(out).toEqual({ credited: ["lib.txt"], foreign: ["status.json", "server.txt"] });
  });

  it("a path lately written by someone else is not credited to a run, but is to a call that names it", () => {
    expect(credit("make", [change("status.json", START + 50)], ["status.json"]).credited).toEqual([]);
    expect(
      credit("sed -i s/a/b/ status.json", [change("status.json", START + 50)], ["status.json"]).credited,
    ).toEqual(["status.json"]);
  });

  it("a named target is credited whatever its time (mv keeps the moved file's)", () => {
    expect(credit("mv /tmp/new.py src/app.py", [change("src/app.py", START - 60_000)]).credited).toEqual([
      "src/app.py",
    ]);
  });

  it("a call that names its edits is credited with those only, not with a file written beside it", () => {
    expect(
      credit("sed -i s/a/b/ src/a.py", [change("src/a.py", START + 5), change("src/b.py", START + 6)]),
    ).toMatchObject({ credited: ["src/a.py"] });
  });

  it("run output never: its redirect, a run-output path, a test run's writes", () => {
    expect(credit("python repro.py > out.txt", [change("out.txt", START + 10)]).credited).toEqual([]);
    expect(credit("python repro.py", [change("app.log", START + 10)]).credited).toEqual([]);
    expect(credit("npm test", [change("src/snapshot.txt", START + 10)]).credited).toEqual([]);
    expect(credit("npm test -- -u", [change("src/snapshot.txt", START + 10)]).credited).toEqual([
      "src/snapshot.txt",
    ]);
  });

  it("a change of git status alone (staged, committed) is nobody's; a deletion goes to a run", () => {
    expect(credit("git add -A", [change("src/a.py", START - 5000, false)])).toEqual({
      credited: [],
      foreign: [],
    });
    expect(credit("rm old.py", [change("old.py", null)]).credited).toEqual(["old.py"]);
  });

  it("a whole-second file system widens the window (a file stamped at the second's start)", () => {
    const coarse = { ...change("lib.txt", Math.floor(START / 1000) * 1000 - 1000), coarse: true };
    expect(credit("sh bump.sh 3 lib.txt", [coarse]).credited).toEqual(["lib.txt"]);
  });
});
