import { describe, expect, it } from "vitest";
import { yesNoCases } from "./_test-cases.ts";
import {
  commandNumbers,
  commandTarget,
  isCommitCommand,
  isTestCommand,
  joinSegments,
  looksSecret,
  mainSegment,
  parseCommand,
  pipelines,
  redactWord,
  referencedFiles,
  refersToFile,
  rejoined,
  segments,
  tokenize,
  workSegments,
} from "./bash-command.ts";
import { configSchema } from "./config.ts";
import { policyFromConfig } from "./policy.ts";

const patterns = policyFromConfig(configSchema.parse({})).testPatterns;

describe("tokenize and segments", () => {
  it("honours quotes, backslashes and separators", () => {
    expect(tokenize(`a "b c" 'd "e"' f\\ g`)).toEqual(["a", "b c", 'd "e"', "f g"]);
    expect(tokenize("a&&b||c;d|e&f|&g")).toEqual([
      "a",
      "&&",
      "b",
      "||",
      "c",
      ";",
      "d",
      "|",
      "e",
      "&",
      "f",
      "|&",
      "g",
    ]);
    expect(tokenize('""')).toEqual([""]);
  });

  it("keeps redirections with & as one word, not a separator", () => {
    expect(tokenize("cat f 2>&1 | head")).toEqual(["cat", "f", "2>&1", "|", "head"]);
    expect(tokenize("make &>log.txt")).toEqual(["make", "&>log.txt"]);
    expect(tokenize("echo x >&2")).toEqual(["echo", "x", ">&2"]);
    expect(tokenize("sleep 1 & wait")).toEqual(["sleep", "1", "&", "wait"]);
  });

  it("drops env assignments and wrappers at the start of each simple command", () => {
    expect(segments("A=1 B=2 env C=3 timeout 30s nohup npm test && FOO=x git status")).toEqual([
      ["npm", "test"],
      ["git", "status"],
    ]);
    expect(mainSegment("cd x && export Y=1 && pytest -q")).toEqual(["pytest", "-q"]);
    expect(mainSegment("cd x")).toEqual(["cd", "x"]);
  });

  it("names the command that matters, not a sleep or a bare echo before it", () => {
    expect(commandTarget("sleep 1 && cat src/mul.js")).toBe("cat src/mul.js");
    expect(commandTarget('echo "== a ==" ; true && npm test 2>&1 | tail -5')).toBe("npm test");
    expect(commandTarget("cd app && sleep 2 && curl -s localhost:3000")).toBe("curl -s");
    // echo into a file writes: it is the work.
    expect(commandTarget("echo x > notes.txt && cat notes.txt")).toBe("echo x");
    // nothing but filler: the first of it.
    expect(commandTarget("sleep 1 & wait")).toBe("sleep 1");
    expect(commandTarget("echo all good; exit 3")).toBe("echo all");
    expect(commandTarget("make; exit $?")).toBe("make");
    expect(commandTarget("cd x")).toBe("cd x");
    expect(workSegments("cd /a && source .venv/bin/activate && pytest t.py")).toEqual([["pytest", "t.py"]]);
    expect(workSegments("cd /a")).toEqual([["cd", "/a"]]);
  });
});

describe("referenced files and numbers", () => {
  it("finds paths and bare names with known extensions, not URLs or /dev/null", () => {
    expect(referencedFiles("cat ./a/b.txt ~/x/y /abs/path README.md 2>/dev/null")).toEqual([
      "/abs/path",
      "README.md",
      "a/b.txt",
      "~/x/y",
    ]);
    expect(referencedFiles("curl https://example.com/a/b.json")).toEqual([]);
    expect(referencedFiles("echo $((6/3)) 1/2")).toEqual([]);
    expect(referencedFiles("ls src/lib/")).toEqual(["src/lib"]);
  });

  it("keeps slice numbers and drops fd numbers, env values and numbers inside file names", () => {
    expect(commandNumbers("sed -n 10,20p f.py", ["f.py"])).toEqual(["10", "20"]);
    expect(commandNumbers("head -n5 f.py 2>&1", ["f.py"])).toEqual(["5"]);
    expect(commandNumbers("N=3 cat v2/file1.py 2>/dev/null", ["v2/file1.py"])).toEqual([]);
    expect(commandNumbers("python3.11 x.py --limit=40", ["x.py"])).toEqual(["40"]);
  });

  it("scans long words in linear time (a regression: the path regex used to backtrack exponentially)", () => {
    const long = `echo ${"a".repeat(200_000)} ${"b.".repeat(50_000)} http${"c".repeat(100_000)} x.py`;
    expect(referencedFiles(long)).toEqual(["x.py"]);
    expect(commandNumbers(long, ["x.py"])).toEqual([]);
    expect(commandTarget(long)).toBe(`echo ${"a".repeat(117)}...`);
  });

  it("reads a long command's numbers from its start, so thousands of files cost no more than the text", {
    timeout: 10_000,
  }, () => {
    // Every file used to be blanked across the whole text (files x length): 20,000 files took 15 s here.
    const files = Array.from({ length: 20_000 }, (_, i) => `src/m${i}/f${i}.ts`);
    const long = `sed -n 10,20p a.py && git add ${files.join(" ")} && head -n 99 b.py`;
    expect(commandNumbers(long, referencedFiles(long))).toEqual(["10", "20"]);
    const short = `sed -n 10,20p a.py && git add ${files.slice(0, 3).join(" ")} && head -n 99 b.py`;
    expect(commandNumbers(short, referencedFiles(short))).toEqual(["10", "20", "99"]);
  });
});

const COMMITS = [
  "git commit -m x",
  "git commit --amend --no-edit",
  "cd repo && git add a.py && git commit -qm 'x y'",
  "git -C sub commit -m x",
  "git -c user.name=x commit -m y",
  "GIT_AUTHOR_NAME=x git commit -m y",
];
const NOT_COMMITS = [
  "git status",
  "git commit-tree abc",
  "echo git commit",
  "git log --grep commit",
  "gitk commit",
];
const TEST_RUNS = [
  "pytest tests/x.py -k foo",
  "python -m pytest -q",
  "cd app && npm test",
  "npm run lint",
  "npx vitest run",
  "CI=1 cargo test",
  "go test ./...",
  "make check",
  "ruff check .",
  "python3 tests/runtests.py",
];
const NOT_TEST_RUNS = ["npm install", "python3 reproduce.py", "cat test_x.py", "echo pytest", "ls tests"];

describe("commit and test detection", () => {
  // git commit in any segment, with global options, including --amend.
  it.each(yesNoCases(COMMITS, NOT_COMMITS))("$input: a commit $expected", ({ input, expected }) => {
    expect(isCommitCommand(input), input).toBe(expected);
  });

  // Test and lint runs, from the configured patterns.
  it.each(yesNoCases(TEST_RUNS, NOT_TEST_RUNS))("$input: a test run $expected", ({ input, expected }) => {
    expect(isTestCommand(input, patterns), input).toBe(expected);
  });
});

const SECRET_WORDS = [
  "sk-abcdefghijkl",
  "ghp_1234567890abcdef",
  "AKIAABCDEFGHIJKL",
  "https://u:p@host/x",
  "Bearer",
  "a1b2c3d4e5f6a7b8c9d0e1f2",
  "--key=a1b2c3d4e5f6a7b8c9d0e1f2",
];
const PLAIN_WORDS = ["pytest", "src/components/navbar.js", "-n", "100", "test_admin_js_units.py", "README"];

describe("redaction", () => {
  // Key-shaped tokens, credential URLs, auth words and long random words are secret.
  it.each(yesNoCases(SECRET_WORDS, PLAIN_WORDS))("$input: secret $expected", ({ input, expected }) => {
    expect(looksSecret(input), input).toBe(expected);
  });

  it("redacts words for targets", () => {
    expect(redactWord("TOKEN=x")).toBeNull();
    expect(redactWord("sk-abcdefghijklmnop")).toBe("<redacted>");
    expect(redactWord("--output=/tmp/x")).toBe("--output=<value>");
    expect(redactWord("two words")).toBe("<text>");
    expect(redactWord("plain")).toBe("plain");
  });
});

describe("parseCommand and rejoined", () => {
  it("parses once: key, target and landing read the same value as the text", () => {
    const text = "cd /p && sed -i 's/a/b/' f.py 2>&1 | tee log.txt && git commit -m x";
    const p = parseCommand(text);
    expect(p.segments).toEqual(segments(text));
    expect(p.lines).toEqual(pipelines(text));
    expect(workSegments(p)).toEqual(workSegments(text));
    expect(commandTarget(p)).toBe(commandTarget(text));
  });

  it("reads the joined work text back as the same segments only when no word would split or lose a character", () => {
    for (const text of ["cat f.py 2>&1 && head -n 5 g.py &>out", "make >&2 ; ls <&0"]) {
      const work = workSegments(text);
      const joined = joinSegments(work);
      expect(rejoined(work, joined)?.segments).toEqual(segments(joined));
    }
    for (const text of [`grep "a b" f`, `echo 'x;y'`, `echo "a&b"`, `printf ''`, `echo a\\\\b`]) {
      const work = workSegments(text);
      expect(rejoined(work, joinSegments(work))).toBeNull();
    }
  });
});

describe("refersToFile", () => {
  it("says whether referencedFiles finds any, URLs and devices not counted", () => {
    for (const text of [
      "cat src/a.ts",
      "x",
      "2>/dev/null",
      "https://example.com/a.ts",
      "1/2",
      "see ./b.md, then",
    ])
      expect(refersToFile(text)).toBe(referencedFiles(text).length > 0);
  });
});
