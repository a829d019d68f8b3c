import { describe, expect, it } from "vitest";
import { splitHeredocs, tokenize } from "./bash-command.ts";
import { bashKey, programOf } from "./bash-key.ts";
import { bashWrites } from "./bash-writes.ts";

const DIR = "/home/dev/repo";

describe("bashWrites: the ways agents edit through bash", () => {
  it.each([
    ["sed -i 's/a/b/' src/app.py", ["src/app.py"]],
    ["sed -i.bak -e 's/a/b/' src/app.py", ["src/app.py"]],
    ["sed --in-place 's/a/b/g' a.py b.py", ["a.py", "b.py"]],
    ["perl -pi -e 's/a/b/' x.pl", ["x.pl"]],
    ["cat <<'EOF' > reproduce.py\nimport sys\nprint(1 > 0)\nEOF", ["reproduce.py"]],
    ["cat > notes.md <<EOF\nhello\nEOF", ["notes.md"]],
    ["echo 'x = 1' >> settings.py", ["settings.py"]],
    ["printf 'a\\n' >out.txt", ["out.txt"]],
    ["cat <<'EOF' | tee src/x.js\nexport const x = 1;\nEOF", ["src/x.js"]],
    ["sort names.txt > sorted.txt", ["sorted.txt"]],
    [": > empty.txt", ["empty.txt"]],
    ["echo hi | tee -a log.txt", ["log.txt"]],
    ["cp src/a.py src/b.py", ["src/b.py"]],
    ["mv -f old.py new.py", ["new.py"]],
    ["git apply fix.patch", ["(patch)"]],
    ["patch -p1 < fix.diff", ["(patch)"]],
    [
      "python3 - <<'PY'\nfrom pathlib import Path\np = Path('a.py')\np.write_text(p.read_text().replace('a', 'b'))\nPY",
      ["(script)"],
    ],
    ["python -c \"open('a.txt', 'w').write('x')\"", ["(script)"]],
    [`cd ${DIR} && sed -i 's/x/y/' ${DIR}/lib/m.py`, [`${DIR}/lib/m.py`]],
  ])("%s", (command, files) => {
    expect(bashWrites(command, DIR)).toEqual(files);
  });

  it.each([
    "cat src/app.py",
    "sed -n '1,20p' src/app.py",
    "grep -rn 'x > y' src",
    "python reproduce.py 2> err.log",
    "pytest -q 2>&1 | tail -5",
    "ls > /dev/null",
    "echo x > /tmp/scratch.txt",
    "echo x >&2",
    "git apply --check fix.patch",
    "patch --dry-run -p1 < fix.diff",
    "python3 - <<'PY'\nprint(open('a.py').read())\nPY",
    "cp only-one-arg",
    "echo x > /etc/hosts",
    "cat <<EOF\nline with > inside\nEOF",
    // what a run prints is its output, not an edit
    "make 1> build.log",
    "npm test &> test.log",
    "npm test > out.txt",
    "python repro.py 2>&1 | tee out.txt",
    "pytest -q | grep FAIL > failures.txt",
    // run-output paths are never edits, whoever writes them
    "echo x > debug.log",
    "cp report.xml junit.xml",
  ])("does not write the work tree: %s", (command) => {
    expect(bashWrites(command, DIR)).toEqual([]);
  });
});

describe("here-documents and newlines", () => {
  it("takes bodies out of the shell text, so a body's words are not commands or redirects", () => {
    const { shell, bodies } = splitHeredocs("cat <<'EOF' > f.py\nif a > b: rm -rf /\nEOF\npython f.py");
    expect(shell).toBe("cat <<'EOF' > f.py\npython f.py");
    expect(bodies).toEqual(["if a > b: rm -rf /"]);
    expect(splitHeredocs("cat <<-END\n\tx\n\tEND\necho done").bodies).toEqual(["\tx"]);
    expect(splitHeredocs("grep x <<< 'y'").bodies).toEqual([]);
  });

  it("splits commands at newlines and joins backslash-continued lines", () => {
    expect(tokenize("cd src\nls -F")).toEqual(["cd", "src", ";", "ls", "-F"]);
    expect(tokenize("ls \\\n  -la")).toEqual(["ls", "-la"]);
  });
});

describe("the normalized key keeps the program", () => {
  const key = (c: string) => bashKey(c, (p) => p.replace(`${DIR}/`, ""));
  it("normalizes the program name", () => {
    expect(programOf(["/usr/bin/python3.11", "x.py"])).toBe("python");
    expect(programOf(["python3", "-m", "pytest"])).toBe("pytest");
    expect(programOf(["sed", "-n", "1p", "f"])).toBe("view");
    expect(programOf(["sed", "-i", "s/a/b/", "f"])).toBe("sed-i");
    expect(programOf(["git", "-C", "sub", "status"])).toBe("git status");
    expect(programOf(["head", "-5", "f"])).toBe("view");
  });

  it("a debug script rerun, the script itself and its removal are three calls", () => {
    expect(new Set([key("python reproduce.py"), key("cat reproduce.py"), key("rm reproduce.py")]).size).toBe(
      3,
    );
  });

  it("a here-document's body is part of the key: two different scripts are two calls", () => {
    expect(key("python - <<'PY'\nprint(1)\nPY")).not.toBe(key("python - <<'PY'\nprint(2)\nPY"));
    expect(key("python - <<'PY'\nprint(1)\nPY")).toBe(key(`cd ${DIR} && python3 - <<'PY'\nprint(1)\nPY`));
  });
});
