// `calibrate --export` with several files, directories and quoted globs, on
// copies of the real recorded exports: every path is read, whatever is
// skipped is said with its reason, and a path that does not exist is exit 2.
// The command itself runs in-process through citty, as `stallguard calibrate`.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { listFlag } from "../../router-ext/calibrate/args.ts";
import { expandGlob, exportFiles, globRegex } from "../../router-ext/calibrate/export-paths.ts";
import type { CalibrateOptions } from "../../router-ext/calibrate/run.ts";
import { loadExports } from "../../router-ext/calibrate/sources.ts";
import type { CliIo } from "../../router-ext/cli/io.ts";
import { run as runCli } from "../../router-ext/cli/run.ts";
import { calibrateCaptured } from "../helpers/calibrate-run.ts";

const RECORDED = join(import.meta.dirname, "..", "fixtures", "recorded");
const idOf = (name: string) =>
  (JSON.parse(readFileSync(join(RECORDED, `${name}.json`), "utf8")) as { info: { id: string } }).info.id;

let tmp: string;
let a: string;
let b: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "stallguard-cal-exp-"));
  // a/: two loops and their labels; b/: the healthy runs, a README and a nested folder.
  a = join(tmp, "a");
  b = join(tmp, "b");
  mkdirSync(a);
  mkdirSync(join(b, "nested"), { recursive: true });
  for (const n of ["read-loop", "bash-retry-loop"])
    copyFileSync(join(RECORDED, `${n}.json`), join(a, `${n}.json`));
  writeFileSync(
    join(a, "labels.json"),
    JSON.stringify({ [idOf("read-loop")]: "loop", [idOf("bash-retry-loop")]: "loop" }),
  );
  for (const n of ["edit-test", "sliced-read"])
    copyFileSync(join(RECORDED, `${n}.json`), join(b, `${n}.json`));
  writeFileSync(join(b, "README.md"), "notes\n");
  copyFileSync(join(RECORDED, "sub-agent.json"), join(b, "nested", "sub-agent.json"));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const run = (opts: CalibrateOptions) => calibrateCaptured(opts);

describe("several exports", () => {
  test("files and directories together: every session read, labels from the directory", async () => {
    const r = await run({
      exports: [join(b, "edit-test.json"), join(RECORDED, "sub-agent.json"), a],
      json: true,
    });
    expect(r.code, r.err).toBe(0);
    expect(r.results.map((x) => x.id).sort()).toEqual(
      [idOf("edit-test"), idOf("sub-agent"), idOf("read-loop"), idOf("bash-retry-loop")].sort(),
    );
    expect(r.labels[idOf("read-loop")]).toBe("loop");
    const doc = JSON.parse(r.out) as { sessions: unknown[] };
    expect(doc.sessions).toHaveLength(4);
  });

  test("a quoted glob is expanded in its last segment; labels beside the matches are read", () => {
    expect(expandGlob(join(a, "*-loop.json"))).toEqual([
      join(a, "bash-retry-loop.json"),
      join(a, "read-loop.json"),
    ]);
    expect(expandGlob(join(b, "?dit-test.json"))).toEqual([join(b, "edit-test.json")]);
    const r = loadExports([join(a, "read*.json")]);
    expect(r.sessions.map((s) => s.id)).toEqual([idOf("read-loop")]);
    expect(r.sets.map((s) => s.name)).toEqual([join(a, "labels.json")]);
    expect(globRegex("ses_*.json").test("ses_x.json.bak")).toBe(false);
    expect(globRegex("a+b(1).json").test("a+b(1).json")).toBe(true);
  });

  test("a glob that matches nothing, a glob in a folder name, a missing path: exit 2 naming it", async () => {
    const none = await run({ exports: [join(a, "nothing-*.json")] });
    expect(none.code).toBe(2);
    expect(none.err).toContain(`nothing matches ${join(a, "nothing-*.json")}`);
    const mid = await run({ exports: [join(tmp, "*", "read-loop.json")] });
    expect(mid.code).toBe(2);
    expect(mid.err).toMatch(/only the last path segment may hold \* or \?/);
    const missing = await run({ exports: [a, join(tmp, "gone.json")] });
    expect(missing.code).toBe(2);
    expect(missing.err).toContain(`no such file or directory: ${join(tmp, "gone.json")}`);
  });

  test("what is skipped is said on stderr with the reason, also with --quiet", async () => {
    const dir = mkdtempSync(join(tmp, "mixed-"));
    copyFileSync(join(RECORDED, "edit-test.json"), join(dir, "one.json"));
    copyFileSync(join(RECORDED, "edit-test.json"), join(dir, "copy.json"));
    writeFileSync(join(dir, "broken.json"), "{not json");
    writeFileSync(join(dir, "notes.txt"), "x");
    const r = await run({ exports: [dir, b, join(dir, "one.json")], quiet: true });
    expect(r.code, r.err).toBe(0);
    expect(r.err).toMatch(/broken\.json: skipped: .*JSON/);
    expect(r.err).toContain(`ignored: ${dir}: ignored notes.txt (not .json)`);
    expect(r.err).toContain(`ignored: ${b}: ignored README.md (not .json), nested/ (a sub-directory`);
    // edit-test is in copy.json, one.json and b/edit-test.json: read once, the other two named.
    expect(r.err).toMatch(
      new RegExp(
        `2 duplicate session\\(s\\): ${idOf("edit-test")} in .*one\\.json \\(already read from .*copy\\.json\\)`,
      ),
    );
    expect(r.err).toContain(`given more than once, read once: ${join(dir, "one.json")}`);
    expect(r.results.filter((x) => x.id === idOf("edit-test"))).toHaveLength(1);
  });

  test("exportFiles lists labels.json as labels, never as an export", () => {
    const f = exportFiles([a, b]);
    expect(f.files.every((p) => !p.endsWith("labels.json"))).toBe(true);
    expect(f.labelFiles).toEqual([{ path: join(a, "labels.json"), how: "directory" }]);
  });
});

describe("the command line", () => {
  test("listFlag: words after each --export value are its values; other positionals are stray", () => {
    const raw = ["--export", "x.json", "y.json", "--json", "z", "--export=p,q", "r", "--labels", "l.json"];
    expect(listFlag(raw, "export", ["y.json", "z", "r"], "p,q")).toEqual({
      values: ["x.json", "y.json", "p", "q", "r"],
      stray: ["z"],
    });
    expect(listFlag([], "export", [], undefined)).toEqual({ values: [], stray: [] });
  });

  describe("stallguard calibrate (the CLI called with argv)", () => {
    const call = async (argv: string[]) => {
      let out = "";
      let err = "";
      const io: CliIo = {
        stdout: { write: (x: string) => (out += x) },
        stderr: { write: (x: string) => (err += x) },
        env: {},
        now: Date.now,
        stopped: new Promise(() => undefined),
      };
      const code = await runCli(["calibrate", ...argv], io);
      return { code, out, err };
    };

    test("--export a.json b.json dir/ reads all of them (not only the first)", async () => {
      const r = await call([
        "--export",
        join(b, "edit-test.json"),
        join(b, "sliced-read.json"),
        a,
        "--json",
        "--quiet",
      ]);
      expect(r.code, r.err).toBe(0);
      const doc = JSON.parse(r.out) as { sessions: Array<{ id: string }>; audit: { sets: unknown[] } };
      expect(doc.sessions.map((x) => x.id).sort()).toEqual(
        [idOf("edit-test"), idOf("sliced-read"), idOf("read-loop"), idOf("bash-retry-loop")].sort(),
      );
      expect(doc.audit.sets).toHaveLength(1);
    });

    test("a word that follows no --export is refused (exit 2), not dropped", async () => {
      const r = await call(["--export", a, "--json", join(b, "edit-test.json")]);
      expect(r.code).toBe(2);
      expect(r.err).toContain(`unexpected argument(s): ${join(b, "edit-test.json")}`);
      expect(r.out).toBe("");
    });
  });
});
