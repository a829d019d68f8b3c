import { describe, expect, it } from "vitest";
import { yesNoCases } from "./_test-cases.ts";
import { bashMayWrite } from "./bash-may-write.ts";

// Commands that only look: the probe is skipped.
const ONLY_LOOK = [
  "cat src/app.py",
  "cd /repo && grep -rn 'def main' src | head -20",
  "ls -la src/ 2>/dev/null",
  "find . -name '*.py' -type f",
  "sed -n '10,40p' src/app.py",
  "nl -ba src/app.py | sed -n 1,20p",
  "git status --short",
  "git -C repo log --oneline -5",
  "git diff HEAD~1 -- src/app.py",
  "git show HEAD:src/app.py 2>&1",
  "wc -l src/*.py && pwd",
  "echo done",
  "",
];
// Commands that edit, delete or run something unknown: probed.
const MAY_WRITE = [
  "sed -i 's/a/b/' src/app.py",
  "sed -n 's/a/b/w out.txt' src/app.py",
  "perl -pi -e 's/a/b/' f.py",
  "cat <<EOF > src/new.py\nprint(1)\nEOF",
  "echo x >> notes.md",
  "grep foo src/a.py > hits.txt",
  "ls 2> err.log",
  "git diff --output=patch.diff",
  "echo x | tee f.txt",
  "find . -name '*.pyc' -delete",
  "find . -name '*.py' -exec sed -i s/a/b/ {} +",
  "sort -o sorted.txt data.txt",
  "uniq in.txt out.txt",
  "python reproduce.py",
  "npm test",
  "pytest -x tests/",
  "git apply fix.patch",
  "git checkout -- src/app.py",
  "git stash",
  "make",
  "source env.sh",
  "cat $(rm -rf build)",
  "echo `touch f`",
  "rm reproduce.py",
  "cp a.py b.py",
  "xargs rm < list.txt",
];

describe("bashMayWrite", () => {
  it.each(yesNoCases(MAY_WRITE, ONLY_LOOK))("$input: may write $expected", ({ input, expected }) => {
    expect(bashMayWrite(input), input).toBe(expected);
  });

  it("reads a sed script for its w command, not the file names", () => {
    expect(bashMayWrite("sed -n '1,20p' www/index.html")).toBe(false);
    expect(bashMayWrite("sed -n -e '/x/w hits' f.txt")).toBe(true);
  });
});
