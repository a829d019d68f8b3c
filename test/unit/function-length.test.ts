// No function over 80 lines outside tests: every non-test .ts file under
// shared/, io/, plugin/, router-ext/ and bench/ is parsed with the typescript
// compiler, and every function, method and arrow function is measured from
// its first token to its closing brace (leading comments not counted).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const REPO = fileURLToPath(new URL("../..", import.meta.url));
const ROOTS = ["shared", "io", "plugin", "router-ext", "bench"];
const MAX_LINES = 80;

/**
 * Not measured: tests (*.test.ts), and test-only helpers kept beside the
 * source they drive (_test-*.ts, imported by tests alone). Scenario data
 * (test/fixtures) lives outside the measured folders.
 */
const skipFile = (path: string) => path.endsWith(".test.ts") || /(^|\/)_test-[^/]*\.ts$/.test(path);

/**
 * Functions allowed over the limit, as "path name": none since issue 24 split
 * the last ones. An entry whose function is no longer over the limit fails the
 * test, so the list can only shrink back to empty.
 */
const ALLOWED = new Set<string>([]);

interface LongFunction {
  /** "path name", name qualified by its enclosing classes and functions. */
  key: string;
  line: number;
  lines: number;
}

/** The name a function is known by: its own, its variable's or its property's; else <anon>. */
function nameOf(n: ts.Node): string | null {
  if (ts.isClassLike(n)) return n.name?.getText() ?? "<class>";
  if (!ts.isFunctionLike(n)) return null;
  if (n.name) return n.name.getText();
  const p = n.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p))
    return p.name.getText();
  return "<anon>";
}

/** Every function-like node with a body longer than `max` lines in one source text. */
function longFunctions(path: string, text: string, max: number): LongFunction[] {
  const src = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const out: LongFunction[] = [];
  const visit = (n: ts.Node, scope: string[]) => {
    const name = nameOf(n);
    const inner = name === null ? scope : [...scope, name];
    if (ts.isFunctionLike(n) && "body" in n && n.body) {
      const first = src.getLineAndCharacterOfPosition(n.getStart(src)).line;
      const last = src.getLineAndCharacterOfPosition(n.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) out.push({ key: `${path} ${inner.join(".")}`, line: first + 1, lines });
    }
    ts.forEachChild(n, (c) => visit(c, inner));
  };
  visit(src, []);
  return out;
}

function measuredFiles(): string[] {
  return ROOTS.flatMap((root) =>
    readdirSync(join(REPO, root), { recursive: true, encoding: "utf8" })
      .map((f) => `${root}/${f.split("\\").join("/")}`)
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts") && !skipFile(f)),
  ).sort();
}

describe("function length", () => {
  const files = measuredFiles();
  const long = files.flatMap((f) => longFunctions(f, readFileSync(join(REPO, f), "utf8"), MAX_LINES));

  it("measures the source, not an empty list", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files).toContain("shared/judge.ts");
    expect(files.some((f) => f.endsWith(".test.ts"))).toBe(false);
  });

  it(`no non-test function is over ${MAX_LINES} lines, outside the allowlist`, () => {
    const over = long
      .filter((f) => !ALLOWED.has(f.key))
      .map((f) => `${f.key} (line ${f.line}, ${f.lines} lines)`);
    expect(over, "split these into named steps").toEqual([]);
  });

  it("every allowlisted function is still over the limit (a split one leaves the list)", () => {
    const still = new Set(long.map((f) => f.key));
    expect(
      [...ALLOWED].filter((k) => !still.has(k)),
      "remove these from ALLOWED",
    ).toEqual([]);
  });
});

describe("the measurement", () => {
  const body = (n: number) => Array.from({ length: n }, (_, i) => `  x += ${i};`).join("\n");
  const fn = (head: string, n: number) => `${head} {\n${body(n - 2)}\n}`;

  it("counts declarations, methods and arrows by their lines, named by where they sit", () => {
    const text = [
      fn("function long()", 81),
      fn("function short()", 80),
      `class Box {\n${fn("  push()", 81)}\n}`,
      `const arrow = () => ${fn("", 81)};`,
      `function outer() {\n  run(() => ${fn("", 82)});\n}`,
    ].join("\n");
    expect(longFunctions("a.ts", text, 80).map((f) => [f.key, f.lines])).toEqual([
      ["a.ts long", 81],
      ["a.ts Box.push", 81],
      ["a.ts arrow", 81],
      ["a.ts outer", 84],
      ["a.ts outer.<anon>", 82],
    ]);
  });

  it("does not count a function's leading comment", () => {
    const text = `/**\n${"* why\n".repeat(10)}*/\n${fn("function f()", 80)}`;
    expect(longFunctions("a.ts", text, 80)).toEqual([]);
  });
});
